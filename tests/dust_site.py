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
#: Kinds of URL that are copies of a page met under another URL (the DUST families).
DUST_KINDS = ("tracking", "print", "mirror", "alias", "session", "view")


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
        links += ["/list?page=1", "/shop?sort=price", "/watch?v=0", "/t/0.html", "/item?id=0"]
        return links

    def render(self, url: str) -> str | None:
        parts = urlsplit(url)
        path, q = parts.path, parse_qs(parts.query)
        kind, group = self.classify(url)
        name, _, key = group.partition(":")
        if group == "home":
            return self._page("Home", f"<p>{_text('home', 8)}</p>", self._home_links())
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
            return self._page(f"Shop by {sort}", main, [f"/shop?sort={s}" for s in SORTS])
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
        return out


class DustServer:
    """Serve a :class:`DustSite` on 127.0.0.1 and 127.0.0.2 (same port) from daemon threads."""

    def __init__(self, site: DustSite) -> None:
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

    def __enter__(self) -> DustSite:
        return self.site

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _handler(site: DustSite) -> type[BaseHTTPRequestHandler]:
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
