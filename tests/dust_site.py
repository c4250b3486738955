"""A generated loopback site with DUST families and traps, for the URL-rule tests.

:class:`DustSite` builds, from a seed, a site whose every URL has a known
*group* (pages of one group are copies; of different groups, distinct):

DUST families (copies a crawl should learn to skip):

- ``/a/<i>.html?utm_source=..&utm_medium=..``: tracking parameters;
- ``/print/<i>.html``: printer views (other chrome, same text);
- ``/mirror/<i>.html``: a syndicated copy with its own chrome;
- ``http://127.0.0.2:<port>/a/<i>.html``: a host alias (the same server);
- ``/cat/<c>?sid=<random>``: category pages whose every link carries a fresh
  session id.

Traps (parameters and paths that change the page; a rule must never skip them):

- ``/list?page=N``: pagination (and ``page`` past the end: one empty page under
  many URLs);
- ``/shop?sort=price|name|new|rating``: sort orders choosing different products;
- ``/item?id=N``: id-style pages sharing one template;
- ``/t/<i>.html``: pages sharing a heavy template, differing in a few sentences;
- ``v``: irrelevant on ``/a/<i>.html?v=2`` (a "view" flag), relevant on
  ``/watch?v=<id>`` (it selects the video).

A multilingual manual (``/manual/<lang>/<section>/<page>.html``, English, German,
French): an untranslated page is the English text in the language's chrome (a copy),
a translated one is distinct, so a rule joining two language folders must never
act. Its sections are also served as ``.../<section>/`` and ``.../index.html``;
the whole manual is mirrored under ``/mirror/manual/`` (a folder inserted); its
"next page" links carry a cache-buster (``?build=<random>``); articles are
linked from it with several tracking parameters at once (``utm_source``,
``utm_medium``, ``utm_campaign``, sometimes ``fbclid``), and the shop with a
``sessionid``.

:class:`FlatSite` is the cost case: 20,000 pages under ``/p/<n>``, a third of
them copies of another page under an unrelated number, so that no URL pattern
joins a copy to its page.

Link order on every page is shuffled by the seed, so crawls meet the pages in
different orders. The server listens on 127.0.0.1 and 127.0.0.2 (same port).
"""

from __future__ import annotations

import random
import socket
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

WORDS = (
    "river mountain engine garden silver window market letter harbor winter candle forest "
    "doctor pocket ladder orange thunder blanket pepper castle meadow bridge lantern violin "
    "canvas rocket pillow saddle tunnel quartz falcon cotton marble anchor basket cactus "
    "dragon feather glacier hammer island jungle kettle lemon magnet needle oyster parrot "
    "quiver ribbon shovel timber umbrella velvet walnut yogurt zebra almond beacon compass "
    "dolphin ember fossil granite horizon ivory jasmine kiwi lobster mosaic nectar orchid "
    "pebble quilt raven sapphire tulip urchin vessel willow acorn badger cedar daisy eagle "
    "fern goose heron iris juniper kestrel lichen maple newt otter poppy quail rowan sparrow"
).split()

ARTICLES = 18
CATEGORIES = 6
LIST_PAGES = 6
ITEMS = 12
TEMPLATED = 8
VIDEOS = 6
PRODUCTS = 40
SORTS = ("price", "name", "new", "rating")
LANGS = ("en", "de", "fr")
SECTIONS = 3
SECTION_PAGES = 8
#: Manual pages translated (distinct from the English page), per language: about a
#: quarter of the German pages and a sixth of the French ones, spread over the sections.
TRANSLATED = {
    lang: frozenset((s, p) for s in range(SECTIONS) for p in range(SECTION_PAGES)
                    if random.Random(f"{lang}-{s}-{p}").random() < share)
    for lang, share in (("de", 0.25), ("fr", 0.17))
}
#: Kinds of URL that are copies of a page met under another URL (the DUST families).
DUST_KINDS = ("tracking", "print", "mirror", "alias", "session", "view", "manual-mirror",
              "index", "busted")
#: Copies that no safe rule covers: untranslated pages in a language folder whose other
#: pages are translated (a rule joining the folders would skip translations).
MIXED_KINDS = ("lang-copy",)


def _text(seed: Any, sentences: int = 18) -> str:
    rng = random.Random(str(seed))
    out = []
    for _ in range(sentences):
        w = [rng.choice(WORDS) for _ in range(9)]
        out.append(f"The {w[0]} {w[1]} met a {w[2]} {w[3]} near the {w[4]} {w[5]} "
                   f"while {w[6]} {w[7]} {w[8]}.")
    return " ".join(out)


class DustSite:
    """Pages, groups and links of one generated site; :meth:`handle` serves one request."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.port = 0
        self.fetched: Counter[str] = Counter()  # full URL -> fetches

    # -- addresses ---------------------------------------------------------------------

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def alias(self) -> str:
        return f"http://127.0.0.2:{self.port}"

    def _sid(self) -> str:
        with self._lock:
            return f"{self._rng.getrandbits(48):012x}"

    def _shuffled(self, links: list[str]) -> list[str]:
        with self._lock:
            self._rng.shuffle(links)
        return links

    # -- ground truth ------------------------------------------------------------------

    def classify(self, url: str) -> tuple[str, str]:
        """``(kind, group)`` of a URL of this site."""
        parts = urlsplit(url)
        path, q = parts.path, parse_qs(parts.query)
        alias = parts.netloc.startswith("127.0.0.2")
        if path == "/":
            return ("alias" if alias else "home"), "home"
        if path.startswith(("/manual/", "/mirror/manual/")):
            return self._classify_manual(path, q, alias)
        if path.startswith(("/a/", "/print/", "/mirror/")) and path.endswith(".html"):
            i = path.rsplit("/", 1)[1][:-5]
            kind = {"a": "article", "print": "print", "mirror": "mirror"}[path.split("/")[1]]
            if kind == "article":
                if alias:
                    kind = "alias"
                elif "utm_source" in q:
                    kind = "tracking"
                elif "v" in q:
                    kind = "view"
            return kind, f"article:{i}"
        if path.startswith("/cat/"):
            return ("session" if "sid" in q else "category"), f"cat:{path[5:]}"
        if path == "/list":
            n = int(q.get("page", ["1"])[0])
            return "list", f"list:{n if n <= LIST_PAGES else 'empty'}"
        if path == "/shop":
            return "shop", f"shop:{q.get('sort', ['price'])[0]}"
        if path == "/item":
            return "item", f"item:{q.get('id', ['?'])[0]}"
        if path.startswith("/t/"):
            return "templated", f"t:{path[3:].removesuffix('.html')}"
        if path == "/watch":
            return "watch", f"watch:{q.get('v', ['?'])[0]}"
        return "other", path

    def _classify_manual(self, path: str, q: dict, alias: bool) -> tuple[str, str]:
        mirror = path.startswith("/mirror/")
        parts = path.split("/")[2 + mirror:]  # lang, section, page
        if len(parts) != 3 or parts[0] not in LANGS:
            return "other", path
        lang, section, page = parts
        if not (section[:1] == "s" and section[1:].isdigit()
                and (page in ("", "index.html") or page.removesuffix(".html").isdigit())):
            return "other", path
        if page in ("", "index.html"):
            group = f"manual:{lang}:{section}:index"
            kind = "index" if page else "section"
        else:
            n = page.removesuffix(".html")
            original = lang == "en" or (int(section[1:]), int(n)) in TRANSLATED[lang]
            group = f"manual:{lang if original else 'en'}:{section}:{n}"
            kind = "manual" if original else "lang-copy"
        if "build" in q and kind in ("manual", "lang-copy"):
            kind = "busted"
        if mirror:
            kind = "manual-mirror"
        if alias:
            kind = "alias"
        return kind, group

    # -- pages -------------------------------------------------------------------------

    def _page(self, title: str, main: str, links: list[str], chrome: str = "",
              heading: str | None = None) -> str:
        anchors = "".join(f'<li><a href="{h}">more</a></li>' for h in self._shuffled(links))
        return (f"<!DOCTYPE html><html><head><title>{title}</title></head><body>"
                f"<nav><ul>{anchors}</ul>{chrome}</nav><main><h1>{heading or title}</h1>"
                f"{main}</main></body></html>")

    def _home_links(self) -> list[str]:
        links = [f"/a/{i}.html" for i in range(ARTICLES)]
        links += [f"/cat/{c}?sid={self._sid()}" for c in range(CATEGORIES)]
        links += ["/list?page=1", f"/shop?sort=price&sessionid={self._sid()}", "/watch?v=0",
                  "/t/0.html", "/item?id=0"]
        links += [f"/manual/{lang}/s0/" for lang in LANGS] + ["/mirror/manual/en/s0/"]
        return links

    def _tracking(self, i: int) -> str:
        with self._lock:
            rng = self._rng
            params = [f"utm_source={rng.choice(('manual', 'mail', 'news'))}",
                      f"utm_medium={rng.choice(('web', 'email'))}"]
            if rng.random() < 0.7:
                params.append(f"utm_campaign=c{rng.randrange(100)}")
            if rng.random() < 0.3:
                params.append(f"fbclid={rng.getrandbits(40):010x}")
            rng.shuffle(params)
        return f"/a/{i}.html?" + "&".join(params)

    def _manual(self, path: str, kind: str, group: str) -> str | None:
        mirror = "/mirror" if path.startswith("/mirror/") else ""
        _, glang, gsection, gpage = group.split(":")
        lang = path.split("/")[2 + bool(mirror)]
        if not gsection.startswith("s") or not gsection[1:].isdigit():
            return None
        s = int(gsection[1:])
        if not 0 <= s < SECTIONS:
            return None
        root = f"{mirror}/manual/{lang}/s{s}/"
        chrome = f"<p>Language: {lang}. Other languages: {' '.join(LANGS)}</p>"
        if gpage == "index":
            links = [f"{root}{p}.html" for p in range(SECTION_PAGES)]
            links += [f"{mirror}/manual/{lang}/s{(s + 1) % SECTIONS}/index.html",
                      f"{mirror}/manual/{lang}/s{(s + 2) % SECTIONS}/"]
            links += [f"/manual/{other}/s{s}/" for other in LANGS if other != lang]
            main = f"<p>{_text(('manual-index', lang, s), 6)}</p>"
            return self._page(f"Manual {lang} section {s}", main, links, chrome=chrome)
        if not gpage.isdigit() or not 0 <= int(gpage) < SECTION_PAGES:
            return None
        p = int(gpage)
        with self._lock:
            build = self._rng.getrandbits(32)
        links = [f"{root}{(p + 1) % SECTION_PAGES}.html?build={build:08x}", root,
                 f"{root}index.html", self._tracking((s * SECTION_PAGES + p) % ARTICLES)]
        links += [f"{mirror}/manual/{other}/s{s}/{p}.html" for other in LANGS if other != lang]
        if not mirror:
            links.append(f"/mirror/manual/{lang}/s{s}/{p}.html")
        body = "".join(f"<p>{_text(('manual', glang, s, p, n), 5)}</p>" for n in range(3))
        return self._page(f"Manual {glang} {s}.{p}", body, links, chrome=chrome,
                          heading=f"Manual {s}.{p}")

    def render(self, url: str) -> str | None:
        parts = urlsplit(url)
        path, q = parts.path, parse_qs(parts.query)
        kind, group = self.classify(url)
        name, _, key = group.partition(":")
        if group == "home":
            return self._page("Home", f"<p>{_text('home', 8)}</p>", self._home_links())
        if name == "manual":
            return self._manual(path, kind, group)
        if name == "article":
            i = int(key)
            nxt = (i + 1) % ARTICLES
            body = "".join(f"<p>{_text(('a', i, n), 6)}</p>" for n in range(3))
            links = [f"/print/{i}.html", f"/mirror/{i}.html", f"{self.alias}/a/{i}.html",
                     f"/a/{nxt}.html?utm_source=feed&utm_medium=rss",
                     f"/a/{(i + 3) % ARTICLES}.html?v=2",
                     f"/cat/{i % CATEGORIES}?sid={self._sid()}", f"/a/{nxt}.html"]
            if kind == "print":
                return self._page(f"Story {i} (print)", body, [f"/a/{i}.html"],
                                  chrome="<p>Printed copy</p>", heading=f"Story {i}")
            if kind == "mirror":
                return self._page(f"Story {i} | Partner", body,
                                  [f"/a/{i}.html", f"/mirror/{nxt}.html"],
                                  chrome="<p>Partner network, weather, adverts</p>",
                                  heading=f"Story {i}")
            return self._page(f"Story {i}", body, links)
        if name == "cat":
            c = int(key)
            if c >= CATEGORIES:
                return None
            members = [i for i in range(ARTICLES) if i % CATEGORIES == c]
            links = [f"/a/{i}.html" for i in members]
            links += [f"/cat/{d}?sid={self._sid()}" for d in range(CATEGORIES) if d != c]
            return self._page(f"Category {c}", f"<p>{_text(('cat', c), 10)}</p>", links)
        if path == "/list":
            n = int(q.get("page", ["1"])[0])
            if n > LIST_PAGES:  # past the end: one empty page under every such URL
                return self._page("Stories", f"<p>{_text('empty', 8)}</p>", ["/list?page=1"])
            links = [f"/list?page={m}" for m in range(1, LIST_PAGES + 4)]
            return self._page(f"Stories page {n}", f"<p>{_text(('list', n), 10)}</p>", links)
        if path == "/shop":
            sort = q.get("sort", ["price"])[0]
            if sort not in SORTS:
                return None
            rng = random.Random(f"sort-{sort}")
            chosen = rng.sample(range(PRODUCTS), 8)
            main = "".join(f"<p>{_text(('product', p), 2)}</p>" for p in chosen)
            return self._page(f"Shop by {sort}", main,
                              [f"/shop?sort={s}&sessionid={self._sid()}" for s in SORTS])
        if path == "/item":
            i = int(q.get("id", ["0"])[0])
            if not 0 <= i < ITEMS:
                return None
            template = f"<p>{_text('item-template', 4)}</p>"
            main = template + f"<p>{_text(('item', i), 6)}</p>"
            links = [f"/item?id={j}" for j in range(ITEMS)]
            return self._page(f"Item {i}", main, links)
        if path.startswith("/t/"):
            i = int(path[3:-5])
            if not 0 <= i < TEMPLATED:
                return None
            template = _text("shared-template", 12)
            main = f"<p>{template} {_text(('t', i), 3)}</p>"
            links = [f"/t/{j}.html" for j in range(TEMPLATED)]
            return self._page(f"Notice {i}", main, links)
        if path == "/watch":
            v = int(q.get("v", ["0"])[0])
            if not 0 <= v < VIDEOS:
                return None
            links = [f"/watch?v={w}" for w in range(VIDEOS)]
            return self._page(f"Video {v}", f"<p>{_text(('video', v), 10)}</p>", links)
        return None

    def handle(self, target: str, host: str) -> tuple[int, bytes]:
        url = f"http://{host}{target}"
        with self._lock:
            self.fetched[url] += 1
        html = self.render(url)
        if html is None:
            return 404, b"<html><body>not found</body></html>"
        return 200, html.encode()

    # -- for tests -----------------------------------------------------------------------

    def groups(self) -> set[str]:
        """Every group a crawl from ``/`` can reach."""
        out = {"home"} | {f"article:{i}" for i in range(ARTICLES)}
        out |= {f"cat:{c}" for c in range(CATEGORIES)}
        out |= {f"list:{n}" for n in range(1, LIST_PAGES + 1)} | {"list:empty"}
        out |= {f"shop:{s}" for s in SORTS} | {f"item:{i}" for i in range(ITEMS)}
        out |= {f"t:{i}" for i in range(TEMPLATED)} | {f"watch:{v}" for v in range(VIDEOS)}
        for lang in LANGS:
            for s in range(SECTIONS):
                out.add(f"manual:{lang}:s{s}:index")
                for p in range(SECTION_PAGES):
                    original = lang == "en" or (s, p) in TRANSLATED[lang]
                    out.add(f"manual:{lang if original else 'en'}:s{s}:{p}")
        return out


class FlatSite:
    """``/p/<n>`` for n below ``pages``: a third are copies of another page under an
    unrelated number (no URL pattern joins them); each page links to ``links`` others
    (a random graph from the seed, every page reachable from ``/p/0``)."""

    def __init__(self, pages: int = 20000, seed: int = 0, links: int = 8) -> None:
        rng = random.Random(seed)
        self.pages = pages
        self.port = 0
        self.fetched: Counter[str] = Counter()
        self._lock = threading.Lock()
        order = list(range(pages))
        rng.shuffle(order)
        self.group = list(range(pages))
        for k in range(0, pages - 2, 3):  # every third page is a copy of the one before
            self.group[order[k + 2]] = order[k]
        self.links = [[(n + 1) % pages] + [rng.randrange(pages) for _ in range(links - 1)]
                      for n in range(pages)]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    alias = base

    def classify(self, url: str) -> tuple[str, str]:
        path = urlsplit(url).path
        if not path.startswith("/p/") or not path[3:].isdigit():
            return "other", path
        n = int(path[3:])
        return ("copy" if self.group[n] != n else "page"), f"p:{self.group[n]}"

    def handle(self, target: str, host: str) -> tuple[int, bytes]:
        with self._lock:
            self.fetched[f"http://{host}{target}"] += 1
        path = target.partition("?")[0]
        if not path.startswith("/p/") or not path[3:].isdigit() or int(path[3:]) >= self.pages:
            return 404, b"<html><body>not found</body></html>"
        n = int(path[3:])
        g = self.group[n]
        anchors = "".join(f'<li><a href="/p/{m}">page {m}</a></li>' for m in self.links[n])
        body = "".join(f"<p>{_text(('flat', g, k), 4)}</p>" for k in range(3))
        html = (f"<!DOCTYPE html><html><head><title>Page {g}</title></head><body><nav><ul>"
                f"{anchors}</ul><p>served as {n}</p></nav><main><h1>Page {g}</h1>{body}"
                f"</main></body></html>")
        return 200, html.encode()


class DustServer:
    """Serve a :class:`DustSite` (or :class:`FlatSite`) on 127.0.0.1 and 127.0.0.2 (same
    port) from daemon threads."""

    def __init__(self, site: DustSite | FlatSite) -> None:
        self.site = site
        handler = _handler(site)
        self.servers = [ThreadingHTTPServer(("127.0.0.1", 0), handler)]
        site.port = self.servers[0].server_address[1]
        self.servers.append(ThreadingHTTPServer(("127.0.0.2", site.port), handler))
        self.threads = []
        for server in self.servers:
            server.daemon_threads = True
            thread = threading.Thread(target=server.serve_forever, daemon=True)
            thread.start()
            self.threads.append(thread)

    def close(self) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> Any:
        return self.site

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _handler(site: DustSite | FlatSite) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # headers and body are two writes: without this, Nagle's algorithm and
            # delayed ACKs hold each keep-alive response for ~40 ms
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_GET(self) -> None:  # noqa: N802 (http.server API)
            status, body = site.handle(self.path, self.headers.get("Host", "127.0.0.1"))
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    return Handler
