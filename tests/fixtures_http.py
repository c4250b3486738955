"""A loopback HTTP site and an in-process crawl helper for Scrapy-layer tests.

``site`` (function scope) is a ``ThreadingHTTPServer`` on ``127.0.0.1:0`` in a
daemon thread, started once per session, whose pages a test sets with
``site.serve({path: (status, content_type, body)})`` (or ``{path: html}``);
``site.url(path)`` gives the absolute URL and ``site.hits`` counts requests per
path. ``crawl(spidercls, settings, **kwargs)`` runs a real crawler and returns it.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.test import get_crawler

__all__ = [
    "CRAWL_SETTINGS",
    "LoopbackSite",
    "article_html",
    "crawl",
    "loopback_server",
    "site",
]

HTML = "text/html; charset=utf-8"

#: Settings for small, deterministic, quiet in-process crawls.
CRAWL_SETTINGS: dict[str, Any] = {
    "CONCURRENT_REQUESTS": 1,
    "DOWNLOAD_DELAY": 0,
    "ROBOTSTXT_OBEY": False,
    "TELNETCONSOLE_ENABLED": False,
    "REMOTE_CONTROL_ENABLED": False,
    "LOG_LEVEL": "DEBUG",
    "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
    "RETRY_ENABLED": False,
}

_WORDS = (
    "river mountain engine garden silver window market letter harbor winter "
    "candle forest doctor pocket ladder orange thunder blanket pepper castle "
    "meadow bridge lantern violin canvas rocket pillow saddle tunnel quartz "
    "falcon cotton marble anchor basket cactus dragon feather glacier hammer "
    "island jungle kettle lemon magnet needle oyster parrot quiver ribbon "
    "shovel timber umbrella velvet walnut yogurt zebra almond beacon compass "
    "dolphin ember fossil granite horizon ivory jasmine kiwi lobster mosaic "
    "nectar orchid pebble quilt raven sapphire tulip urchin vessel willow"
).split()


def article_html(
    seed: int,
    *,
    words: int = 300,
    links: tuple[str, ...] = (),
    chrome: str = "",
    title: str | None = None,
    labels: tuple[str, ...] | None = None,
) -> str:
    """An HTML article whose text is drawn from ``seed``: equal seeds, equal text.

    ``chrome`` is extra navigation text outside the article; ``links`` become
    anchors in the navigation, their text ``labels`` (default: the links).
    """
    rng = random.Random(seed)

    def sentence() -> str:
        w = [rng.choice(_WORDS) for _ in range(8)]
        return f"The {w[0]} {w[1]} is a {w[2]} {w[3]} and the {w[4]} {w[5]} was {w[6]} {w[7]}."

    paragraphs = []
    for _ in range(max(1, words // 80)):
        paragraphs.append("<p>" + " ".join(sentence() for _ in range(5)) + "</p>")
    labels = links if labels is None else labels
    anchors = "".join(f'<a href="{href}">{label}</a> ' for href, label in zip(links, labels))
    return (
        f"<!DOCTYPE html><html><head><title>{title or f'Article {seed}'}</title></head>"
        f"<body><nav>{anchors}{chrome}</nav><article><h1>Article {seed}</h1>"
        + "".join(paragraphs)
        + "</article></body></html>"
    )


class LoopbackSite:
    """Serve canned pages on 127.0.0.1 from a daemon thread."""

    def __init__(self) -> None:
        self.pages: dict[str, tuple[int, str, bytes]] = {}
        self.hits: Counter[str] = Counter()
        self._lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server API)
                path = self.path
                with site._lock:
                    site.hits[path] += 1
                    page = site.pages.get(path)
                status, content_type, body = page or (404, "text/plain", b"not found")
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def url(self, path: str) -> str:
        return self.base + path

    def serve(self, pages: Mapping[str, Any]) -> None:
        """Replace the site's pages; a value is HTML text or ``(status, type, body)``."""
        normalized = {}
        for path, page in pages.items():
            if isinstance(page, str):
                page = (200, HTML, page)
            status, content_type, body = page
            if isinstance(body, str):
                body = body.encode("utf-8")
            normalized[path] = (status, content_type, body)
        with self._lock:
            self.pages = normalized
            self.hits.clear()


@pytest.fixture(scope="session")
def loopback_server():
    server = LoopbackSite()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def site(loopback_server: LoopbackSite) -> LoopbackSite:
    loopback_server.serve({})
    return loopback_server


async def crawl(spidercls: type, settings: Mapping[str, Any] | None = None, **kwargs: Any):
    """Run one in-process crawl (Scrapy 2.13+) and return its crawler.

    Use from a test decorated with ``scrapy.utils.defer.deferred_f_from_coro_f``.
    """
    crawler = get_crawler(spidercls, {**CRAWL_SETTINGS, **(settings or {})})
    await maybe_deferred_to_future(crawler.crawl(**kwargs))
    return crawler
