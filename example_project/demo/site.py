"""The demo site: a small town paper with the duplicates real crawls meet.

What it serves (texts in ``demo.content``):

- ``/``: home page with the top stories, links to the listing and the shop.
- ``/news/<slug>.html``: 20 articles, each with a rotating sidebar ("most read",
  an advert), related stories, and links to its printer version and its copy
  on a partner site.
- ``/print/<slug>.html``: printer versions with a print timestamp and a link
  to the next printable story.
- ``/partner/<slug>.html``: the same articles syndicated by another paper: a
  different layout, navigation, adverts, view counters and "updated" times,
  and links into partner-only pages (``/partner/``, ``/partner/section/…``).
- ``/news/list?page=N&sid=<random>``: the story listing of a legacy CMS that
  puts a fresh session id in every listing link of every view, so URL
  deduplication never sees the same URL twice.
- ``/shop/`` and ``/shop/<slug>.html``: 14 distinct product pages that share one
  heavy template (navigation, sidebar, cookie notice, long footer).

Each page view is recorded (URL and the links it carried) so that the demo can
tell which outlinks a dropped page would have added to the crawl frontier.

Run it alone with ``python demo/site.py --port 8000`` (or ``python -m demo.site``
from ``example_project/``).
"""

from __future__ import annotations

import argparse
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import NamedTuple
from urllib.parse import parse_qs, urljoin, urlsplit

try:
    from demo import content
except ImportError:  # run as a script: python example_project/demo/site.py
    import content  # type: ignore[no-redef]

__all__ = ["DemoSite", "PageKind", "Served", "classify", "serve"]

LISTING_PAGE_SIZE = 5
ARTICLES = {a.slug: a for a in content.ARTICLES}
PRODUCTS = {p.slug: p for p in content.PRODUCTS}
LISTING_PAGES = -(-len(content.ARTICLES) // LISTING_PAGE_SIZE)


class PageKind(NamedTuple):
    """What a URL of the site is: ``kind`` of page and ``group`` of pages with one text.

    Pages of one group are copies of each other (an article, its printer
    version and its partner copy; every view of one listing page); pages of
    different groups are distinct.
    """

    kind: str
    group: str

    @property
    def is_variant(self) -> bool:
        """A copy that a near-duplicate filter should drop once the original is known."""
        return self.kind in {"print", "mirror", "listing"}


class Served(NamedTuple):
    """One page view: the URL requested, its status and the absolute links it carried."""

    url: str
    status: int
    links: tuple[str, ...]


def classify(url: str) -> PageKind:
    """Say what page of the demo site *url* names (``("unknown", path)`` if none)."""
    parts = urlsplit(url)
    path = parts.path
    if path == "/":
        return PageKind("home", "home")
    if path == "/robots.txt":
        return PageKind("robots", "robots")
    if path == "/news/list":
        page = parse_qs(parts.query).get("page", ["1"])[0]
        return PageKind("listing", f"listing:{page}")
    if path == "/shop/":
        return PageKind("shop", "shop")
    if path == "/partner/":
        return PageKind("mirror-index", "partner-index")
    for prefix, kind in (
        ("/news/", "article"),
        ("/print/", "print"),
        ("/partner/section/", "mirror-section"),
        ("/partner/", "mirror"),
        ("/shop/", "product"),
    ):
        if path.startswith(prefix) and path.endswith(".html"):
            slug = path[len(prefix) : -len(".html")]
            if kind == "product":
                return PageKind(kind, f"product:{slug}")
            if kind == "mirror-section":
                return PageKind(kind, f"partner-section:{slug}")
            return PageKind(kind, f"story:{slug}")
    return PageKind("unknown", path)


def _page(title: str, body: str, *, og_type: str = "website", head: str = "") -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{escape(title)}</title>"
        f"<meta property=\"og:type\" content=\"{og_type}\">{head}</head>\n"
        f"<body>\n{body}\n</body></html>\n"
    )


def _a(href: str, text: str, cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return f'<a href="{escape(href)}"{attr}>{escape(text)}</a>'


def _paragraphs(paragraphs: tuple[str, ...] | list[str]) -> str:
    return "\n".join(f"<p>{escape(p)}</p>" for p in paragraphs)


def _first_sentence(text: str) -> str:
    return text.split(". ")[0].rstrip(".") + "."


class DemoSite:
    """Builds the pages of the demo site; each call of :meth:`render` is one page view.

    Per-view details (session ids, counters, timestamps, adverts) come from a
    ``random.Random(seed)``; views are recorded in :attr:`served`.
    """

    def __init__(self, seed: int | None = None) -> None:
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.served: list[Served] = []
        self.base_url = "http://127.0.0.1"

    # -- per-view randomness --------------------------------------------------------------

    def _sid(self) -> str:
        with self._lock:
            return f"{self._rng.getrandbits(64):016x}"

    def _randint(self, low: int, high: int) -> int:
        with self._lock:
            return self._rng.randint(low, high)

    def _sample(self, seq, n: int) -> list:
        with self._lock:
            return self._rng.sample(list(seq), n)

    def listing_url(self, page: int = 1) -> str:
        return f"/news/list?page={page}&sid={self._sid()}"

    # -- shared blocks ---------------------------------------------------------------------

    def _courier_header(self) -> str:
        return (
            '<header class="masthead"><p class="brand">' + escape(content.SITE_NAME) + "</p>"
            "<nav><ul>"
            f"<li>{_a('/', 'Home')}</li>"
            f"<li>{_a(self.listing_url(1), 'All stories')}</li>"
            f"<li>{_a('/shop/', 'Shop')}</li>"
            "</ul></nav></header>"
        )

    def _courier_sidebar(self, exclude: str = "") -> str:
        picks = [a for a in self._sample(content.ARTICLES, 6) if a.slug != exclude][:5]
        most_read = "".join(f"<li>{_a(f'/news/{a.slug}.html', a.title)}</li>" for a in picks)
        advert = self._sample(content.SITE_ADS, 1)[0]
        return (
            '<aside class="sidebar">'
            f"<section class=\"most-read\"><h2>Most read</h2><ol>{most_read}</ol></section>"
            f'<div class="advert"><p>{escape(advert)}</p></div>'
            f'<section class="newsletter"><h2>Newsletter</h2><p>{escape(content.NEWSLETTER)}</p>'
            '<form action="/subscribe" method="post"><input name="email"><button>Sign up</button>'
            "</form></section></aside>"
        )

    def _courier_footer(self) -> str:
        return f'<footer><p>{escape(content.SITE_ABOUT)}</p><p>{escape(content.SITE_FOOTER)}</p></footer>'

    # -- pages -----------------------------------------------------------------------------

    def home(self) -> str:
        top = content.ARTICLES[:3]
        stories = "\n".join(
            f'<div class="teaser"><h2>{_a(f"/news/{a.slug}.html", a.title)}</h2>'
            f"<p>{escape(a.paragraphs[0])}</p></div>"
            for a in top
        )
        body = (
            self._courier_header()
            + '<main><h1>Welcome to the Courier</h1>'
            f"<p>{escape(content.SITE_ABOUT)} Read the latest stories below, browse the full "
            f"{_a(self.listing_url(1), 'story listing')}, or visit the "
            f"{_a('/shop/', 'Courier Store')} to support the paper.</p>"
            f"{stories}</main>"
            + self._courier_sidebar()
            + self._courier_footer()
        )
        return _page(content.SITE_NAME, body)

    def listing(self, page: int) -> str | None:
        if not 1 <= page <= LISTING_PAGES:
            return None
        chunk = content.ARTICLES[(page - 1) * LISTING_PAGE_SIZE : page * LISTING_PAGE_SIZE]
        teasers = "\n".join(
            f'<div class="teaser"><h2>{_a(f"/news/{a.slug}.html", a.title)}</h2>'
            f'<p class="byline">{escape(a.author)}, {a.date}</p>'
            f"<p>{escape(a.paragraphs[0])}</p></div>"
            for a in chunk
        )
        pager = " ".join(
            _a(self.listing_url(n), str(n)) if n != page else f"<b>{n}</b>"
            for n in range(1, LISTING_PAGES + 1)
        )
        if page > 1:
            pager = _a(self.listing_url(page - 1), "Previous") + " " + pager
        if page < LISTING_PAGES:
            pager += " " + _a(self.listing_url(page + 1), "Next")
        body = (
            self._courier_header()
            + f"<main><h1>All stories, page {page} of {LISTING_PAGES}</h1>{teasers}"
            f'<div class="pager">{pager}</div>'
            f'<p class="counter">Page views today: {self._randint(1000, 99999)}</p></main>'
            + self._courier_footer()
        )
        return _page(f"All stories, page {page} - {content.SITE_NAME}", body)

    def _related(self, article: content.Article) -> list[content.Article]:
        i = content.ARTICLES.index(article)
        return [content.ARTICLES[(i + d) % len(content.ARTICLES)] for d in (1, 2, 5)]

    def article(self, slug: str) -> str | None:
        a = ARTICLES.get(slug)
        if a is None:
            return None
        related = "".join(f"<li>{_a(f'/news/{r.slug}.html', r.title)}</li>" for r in self._related(a))
        body = (
            self._courier_header()
            + "<main><article>"
            f"<h1>{escape(a.title)}</h1>"
            f'<p class="byline">By {escape(a.author)}, {a.date}, in {a.section}</p>'
            f"{_paragraphs(a.paragraphs)}"
            f'<p class="tools">{_a(f"/print/{slug}.html", "Print this story")} · '
            f"Also published in the {_a(f'/partner/{slug}.html', content.PARTNER_NAME)}</p>"
            "</article>"
            f'<section class="related"><h2>Related stories</h2><ul>{related}</ul></section></main>'
            + self._courier_sidebar(exclude=slug)
            + self._courier_footer()
        )
        return _page(f"{a.title} - {content.SITE_NAME}", body, og_type="article")

    def printable(self, slug: str) -> str | None:
        a = ARTICLES.get(slug)
        if a is None:
            return None
        nxt = content.ARTICLES[(content.ARTICLES.index(a) + 1) % len(content.ARTICLES)]
        printed = datetime.now(timezone.utc).strftime("%d %B %Y at %H:%M:%S UTC")
        body = (
            f'<header><p class="brand">{escape(content.SITE_NAME)}</p></header>'
            f"<h1>{escape(a.title)}</h1><p>By {escape(a.author)}, {a.date}</p>"
            f"{_paragraphs(a.paragraphs)}"
            f"<footer><hr><p>Printed on {printed} from {self.base_url}/news/{slug}.html</p>"
            f"<p>{_a(f'/news/{slug}.html', 'Back to the story')} · "
            f"{_a(f'/print/{nxt.slug}.html', 'Print the next story')}</p></footer>"
        )
        return _page(f"{a.title} (print)", body, og_type="article",
                     head='<meta name="robots" content="noindex">')

    def _partner_chrome(self) -> tuple[str, str]:
        sections = "".join(
            f'<span class="nav-item">{_a(f"/partner/section/{s}.html", s.title())}</span>'
            for s in content.SECTIONS
        )
        top = (
            '<div id="top-bar"><div class="logo">' + escape(content.PARTNER_NAME) + "</div>"
            f'<div class="navbar">{_a("/partner/", "Front page")}{sections}</div>'
            '<div class="weather">Elden valley: showers, 11°C</div></div>'
        )
        bottom = (
            f'<div class="site-footer"><p>{escape(content.PARTNER_FOOTER)}</p>'
            f"<p>{_a('/partner/', content.PARTNER_NAME)}</p></div>"
        )
        return top, bottom

    def mirror(self, slug: str) -> str | None:
        a = ARTICLES.get(slug)
        if a is None:
            return None
        top, bottom = self._partner_chrome()
        ads = self._sample(content.PARTNER_ADS, 2)
        more = self._sample([x for x in content.ARTICLES if x.slug != slug], 4)
        more_html = "".join(
            f'<div class="more-item">{_a(f"/partner/{m.slug}.html", m.title)}</div>' for m in more
        )
        minutes = self._randint(2, 59)
        views = self._randint(100, 20000)
        paragraphs = [f"<p>{escape(p)}</p>" for p in a.paragraphs]
        paragraphs.insert(1, f'<div class="promo"><span>Advertisement</span> {escape(ads[0])}</div>')
        body = (
            top
            + '<div class="content-wrap"><div class="story">'
            f'<h1 class="headline">{escape(a.title)}</h1>'
            f'<div class="meta">{escape(a.author)} · Updated {minutes} minutes ago · '
            f"{views:,} views</div>"
            f'<div class="story-body">{"".join(paragraphs)}</div>'
            f'<div class="credit">First published by '
            f"{_a(f'/news/{slug}.html', content.SITE_NAME)} on {a.date}.</div>"
            "</div>"
            f'<aside class="right-rail"><div class="promo">{escape(ads[1])}</div>'
            f'<div class="more"><b>More from the valley</b>{more_html}</div></aside></div>'
            + bottom
        )
        return _page(f"{a.title} | {content.PARTNER_NAME}", body, og_type="article")

    def mirror_index(self, section: str | None = None) -> str | None:
        if section is not None and section not in content.SECTIONS:
            return None
        items = [a for a in content.ARTICLES if section in (None, a.section)]
        top, bottom = self._partner_chrome()
        rows = "".join(
            f'<div class="row">{_a(f"/partner/{a.slug}.html", a.title)}'
            f"<span>{escape(_first_sentence(a.paragraphs[0]))}</span></div>"
            for a in items
        )
        heading = f"{section.title()} news" if section else "Front page"
        body = top + f'<div class="content-wrap"><div class="h">{heading}</div>{rows}</div>' + bottom
        return _page(f"{heading} | {content.PARTNER_NAME}", body)

    def _shop_chrome(self) -> tuple[str, str]:
        menu = "".join(
            f"<li>{_a(f'/shop/{p.slug}.html', p.name)}</li>" for p in content.PRODUCTS
        )
        top = (
            f'<div class="cookie-banner"><p>{escape(content.COOKIE_NOTICE)}</p>'
            "<button>Accept</button></div>"
            f'<header><p class="brand">{escape(content.SHOP_NAME)}</p>'
            f"<nav><ul><li>{_a('/', 'Back to the Courier')}</li><li>{_a('/shop/', 'All products')}</li>"
            f'<li class="menu">Browse<ul>{menu}</ul></li></ul></nav></header>'
        )
        bottom = (
            f'<aside class="sidebar"><h2>Why buy here</h2><p>{escape(content.SHOP_SIDEBAR)}</p></aside>'
            f'<footer><p>{escape(content.SHOP_FOOTER)}</p></footer>'
        )
        return top, bottom

    def shop(self) -> str:
        top, bottom = self._shop_chrome()
        cards = "".join(
            f'<div class="card">{_a(f"/shop/{p.slug}.html", p.name)} <span>{p.price}</span></div>'
            for p in content.PRODUCTS
        )
        body = top + f"<main><h1>All products</h1>{cards}</main>" + bottom
        return _page(content.SHOP_NAME, body)

    def product(self, slug: str) -> str | None:
        p = PRODUCTS.get(slug)
        if p is None:
            return None
        top, bottom = self._shop_chrome()
        i = content.PRODUCTS.index(p)
        also = [content.PRODUCTS[(i + d) % len(content.PRODUCTS)] for d in (1, 3, 7)]
        specs = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in p.specs)
        body = (
            top
            + f'<main><div class="product"><h1>{escape(p.name)}</h1>'
            f'<p class="price">{p.price}</p>{_paragraphs(p.description)}'
            f'<table class="specs">{specs}</table>'
            '<form action="/basket" method="post"><button>Add to basket</button></form></div>'
            '<section class="also"><h2>You might also like</h2><ul>'
            + "".join(f"<li>{_a(f'/shop/{x.slug}.html', x.name)}</li>" for x in also)
            + "</ul></section></main>"
            + bottom
        )
        return _page(f"{p.name} - {content.SHOP_NAME}", body, og_type="product")

    # -- dispatch --------------------------------------------------------------------------

    def render(self, target: str) -> tuple[int, str, str]:
        """Render the page for a request target (path and query): status, content type, body."""
        parts = urlsplit(target)
        path, query = parts.path, parse_qs(parts.query)
        page: str | None = None
        if path == "/robots.txt":
            return 200, "text/plain", "User-agent: *\nDisallow: /basket\nDisallow: /subscribe\n"
        if path == "/":
            page = self.home()
        elif path == "/news/list":
            try:
                page = self.listing(int(query.get("page", ["1"])[0]))
            except ValueError:
                page = None
        elif path == "/shop/":
            page = self.shop()
        elif path == "/partner/":
            page = self.mirror_index()
        else:
            kind = classify(target)
            slug = kind.group.partition(":")[2]
            page = {
                "article": self.article,
                "print": self.printable,
                "mirror": self.mirror,
                "mirror-section": self.mirror_index,
                "product": self.product,
            }.get(kind.kind, lambda _slug: None)(slug)
        if page is None:
            return 404, "text/html", _page("Not found", "<h1>Not found</h1>")
        return 200, "text/html", page

    def handle(self, target: str) -> tuple[int, str, bytes]:
        """Render *target* and record the view with its outlinks (what a crawler would see)."""
        status, ctype, text = self.render(target)
        links: tuple[str, ...] = ()
        if ctype == "text/html" and status == 200:
            import lxml.html

            doc = lxml.html.document_fromstring(text)
            url = self.base_url + target
            links = tuple(urljoin(url, h) for h in doc.xpath("//a/@href"))
        with self._lock:
            self.served.append(Served(self.base_url + target, status, links))
        return status, ctype, text.encode("utf-8")

    def all_pages(self) -> Iterator[str]:
        """Every distinct page path of the site (listing pages without a session id)."""
        yield "/"
        for n in range(1, LISTING_PAGES + 1):
            yield f"/news/list?page={n}"
        for a in content.ARTICLES:
            yield f"/news/{a.slug}.html"
            yield f"/print/{a.slug}.html"
            yield f"/partner/{a.slug}.html"
        yield "/partner/"
        for s in content.SECTIONS:
            yield f"/partner/section/{s}.html"
        yield "/shop/"
        for p in content.PRODUCTS:
            yield f"/shop/{p.slug}.html"


def _handler_for(site: DemoSite) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "LarkmoorDemo/1.0"

        def do_GET(self) -> None:  # noqa: N802 (http.server naming)
            status, ctype, body = site.handle(self.path)
            self.send_response(status)
            self.send_header("Content-Type", f"{ctype}; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

    return Handler


@contextmanager
def serve(host: str = "127.0.0.1", port: int = 0, *, seed: int | None = None) -> Iterator[DemoSite]:
    """Serve a new :class:`DemoSite` from a daemon thread; ``site.base_url`` is set on entry."""
    site = DemoSite(seed=seed)
    server = ThreadingHTTPServer((host, port), _handler_for(site))
    server.daemon_threads = True
    site.base_url = f"http://{host}:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="demo-site", daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the scrapy-simhash demo site.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    parser.add_argument("--seed", type=int, default=None, help="seed of per-view randomness")
    args = parser.parse_args(argv)
    with serve(args.host, args.port, seed=args.seed) as site:
        print(site.base_url + "/", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
