"""Real in-process crawls of a loopback site with SimhashMiddleware enabled."""

from __future__ import annotations

import json
import logging

import pytest
import scrapy
from scrapy.http import HtmlResponse
from scrapy.utils.defer import deferred_f_from_coro_f

from scrapy_simhash import signals as simhash_signals
from scrapy_simhash.backends import BackendError
from scrapy_simhash.backends.memory import MemoryBackend
from scrapy_simhash.middleware import NearDuplicate
from tests.fixtures_http import article_html, crawl

pytestmark = pytest.mark.scrapy

MW = {"SPIDER_MIDDLEWARES": {"scrapy_simhash.SimhashMiddleware": 100}}


class SiteSpider(scrapy.Spider):
    """Follows every link from ``start_path``; records what its callbacks saw."""

    name = "site"

    def __init__(
        self,
        base: str,
        start_path: str = "/",
        dont_filter: tuple[str, ...] = (),
        no_simhash: tuple[str, ...] = (),
        use_errback: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.base = base
        self.start_path = start_path
        self.dont_filter = set(dont_filter)
        self.no_simhash = set(no_simhash)
        self.use_errback = use_errback
        self.parsed: list[str] = []
        self.failures: list = []

    def path(self, url: str) -> str:
        return url[len(self.base) :]

    async def start(self):
        yield scrapy.Request(self.base + self.start_path, dont_filter=True)

    def parse(self, response):
        self.parsed.append(self.path(response.url))
        yield {"url": response.url}
        if not isinstance(response, HtmlResponse):
            return
        for href in response.css("a::attr(href)").getall():
            yield scrapy.Request(
                self.base + href,
                callback=self.parse,
                errback=self.on_error if self.use_errback else None,
                dont_filter=href in self.dont_filter,
                meta={"simhash_enabled": False} if href in self.no_simhash else {},
            )

    def on_error(self, failure):
        self.failures.append(failure.value)


def serve_dup_site(site, *, extra=None):
    """``/`` links /a, /b, /c; /b repeats /a's article with other chrome."""
    pages = {
        "/": article_html(1, links=("/a", "/b", "/c")),
        "/a": article_html(2, links=("/a1",)),
        "/b": article_html(2, links=("/b1", "/b2"), chrome="Sponsored"),
        "/c": article_html(3),
        "/a1": article_html(4),
        "/b1": article_html(5),
        "/b2": article_html(6),
    }
    pages.update(extra or {})
    site.serve(pages)


def messages(caplog, name="scrapy_simhash.dropped"):
    return [r.getMessage() for r in caplog.records if r.name == name]


@deferred_f_from_coro_f
async def test_drop(site, caplog):
    caplog.set_level(logging.INFO)
    serve_dup_site(site)
    crawler = await crawl(SiteSpider, MW, base=site.base)
    spider, stats = crawler.spider, crawler.stats
    assert sorted(spider.parsed) == ["/", "/a", "/a1", "/c"]
    assert site.hits["/b"] == 1
    assert site.hits["/b1"] == site.hits["/b2"] == 0  # outlinks of the dropped page
    assert stats.get_value("simhash/response_count") == 5
    assert stats.get_value("simhash/duplicate_count") == 1
    assert stats.get_value("simhash/duplicate_distance_count/0") == 1
    assert stats.get_value("simhash/initial_index_size") == 0
    assert stats.get_value("simhash/index_size") == 4
    assert stats.get_value("simhash/cpu_seconds") > 0
    assert stats.get_value("item_scraped_count") == 4
    assert stats.get_value("spider_exceptions/count") is None
    assert stats.get_value("finish_reason") == "finished"
    assert messages(caplog) == [
        f"Dropped near-duplicate <200 {site.url('/b')}> (distance 0 to <{site.url('/a')}>)"
    ]
    record = next(r for r in caplog.records if r.name == "scrapy_simhash.dropped")
    assert record.levelno == logging.INFO
    assert record.simhash["duplicate_of"] == site.url("/a")
    assert record.simhash["action"] == "drop"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    summary = [m for m in messages(caplog, "scrapy_simhash.middleware") if "fingerprinted" in m]
    assert summary and "1 near-duplicates" in summary[0]


@deferred_f_from_coro_f
async def test_drop_outlinks(site):
    serve_dup_site(site)
    settings = {**MW, "SIMHASH_ACTION": "drop_outlinks"}
    crawler = await crawl(SiteSpider, settings, base=site.base)
    assert sorted(crawler.spider.parsed) == ["/", "/a", "/a1", "/b", "/c"]
    assert site.hits["/b1"] == site.hits["/b2"] == 0
    assert crawler.stats.get_value("simhash/outlinks_dropped_count") == 2
    assert crawler.stats.get_value("simhash/duplicate_count") == 1
    assert crawler.stats.get_value("item_scraped_count") == 5  # /b's item passes


@deferred_f_from_coro_f
async def test_log_only(site, caplog):
    caplog.set_level(logging.INFO)
    serve_dup_site(site)
    settings = {**MW, "SIMHASH_ACTION": "log", "SIMHASH_LOG_LEVEL": "WARNING"}
    crawler = await crawl(SiteSpider, settings, base=site.base)
    assert sorted(crawler.spider.parsed) == ["/", "/a", "/a1", "/b", "/b1", "/b2", "/c"]
    assert crawler.stats.get_value("simhash/duplicate_count") == 1
    assert crawler.stats.get_value("simhash/outlinks_dropped_count") is None
    record = next(r for r in caplog.records if r.name == "scrapy_simhash.dropped")
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith(f"Found near-duplicate <200 {site.url('/b')}>")


@deferred_f_from_coro_f
async def test_dont_filter_is_kept(site):
    serve_dup_site(site)
    crawler = await crawl(SiteSpider, MW, base=site.base, dont_filter=("/b",))
    assert "/b" in crawler.spider.parsed
    assert site.hits["/b1"] == 1
    assert crawler.stats.get_value("simhash/kept_dont_filter_count") == 1
    assert crawler.stats.get_value("simhash/duplicate_count") is None


@deferred_f_from_coro_f
async def test_meta_disabled_is_skipped(site):
    serve_dup_site(site)
    crawler = await crawl(SiteSpider, MW, base=site.base, no_simhash=("/b",))
    assert "/b" in crawler.spider.parsed
    assert crawler.stats.get_value("simhash/skipped_count/disabled_meta") == 1
    assert crawler.stats.get_value("simhash/response_count") == 6


@deferred_f_from_coro_f
async def test_non_html_and_thin_pages_are_skipped(site):
    site.serve(
        {
            "/": article_html(1, links=("/data.json", "/notes.txt", "/thin", "/thin2")),
            "/data.json": (200, "application/json", json.dumps({"a": 1})),
            "/notes.txt": (200, "text/plain", "plain text " * 50),
            "/thin": "<html><body><p>Hi</p></body></html>",
            "/thin2": "<html><body><p>Hi</p></body></html>",
        }
    )
    crawler = await crawl(SiteSpider, MW, base=site.base)
    assert sorted(crawler.spider.parsed) == ["/", "/data.json", "/notes.txt", "/thin", "/thin2"]
    stats = crawler.stats
    assert stats.get_value("simhash/skipped_count/non_html") == 2
    assert stats.get_value("simhash/skipped_count/too_few_features") == 2
    assert stats.get_value("simhash/response_count") == 1


@deferred_f_from_coro_f
async def test_http_errors_are_not_fingerprinted(site):
    site.serve(
        {
            "/": article_html(1, links=("/missing", "/gone")),
            "/missing": (404, "text/html", article_html(9)),
            "/gone": (404, "text/html", article_html(9)),
        }
    )
    crawler = await crawl(SiteSpider, MW, base=site.base)
    assert crawler.stats.get_value("simhash/response_count") == 1
    assert crawler.stats.get_value("httperror/response_ignored_count") == 2


@deferred_f_from_coro_f
async def test_errback_receives_near_duplicate(site, caplog):
    serve_dup_site(site)
    crawler = await crawl(SiteSpider, MW, base=site.base, use_errback=True)
    [failure] = crawler.spider.failures
    assert isinstance(failure, NearDuplicate)
    assert failure.response.url == site.url("/b")
    assert failure.duplicate_of == site.url("/a")
    assert failure.distance == 0
    assert 0 <= failure.fingerprint < 2**64
    assert crawler.stats.get_value("simhash/duplicate_count") == 1
    assert "/b" not in crawler.spider.parsed


@deferred_f_from_coro_f
async def test_audit_file_and_signal(site, tmp_path):
    serve_dup_site(site)
    log_file = tmp_path / "audit" / "drops.jsonl"
    received = []

    def on_duplicate(**kwargs):  # the dispatcher keeps weak references: keep this alive
        received.append(kwargs)

    class SignalSpider(SiteSpider):
        @classmethod
        def from_crawler(cls, crawler, *args, **kwargs):
            spider = super().from_crawler(crawler, *args, **kwargs)
            crawler.signals.connect(on_duplicate, signal=simhash_signals.simhash_duplicate)
            return spider

    settings = {**MW, "SIMHASH_LOG_FILE": str(log_file)}
    await crawl(SignalSpider, settings, base=site.base)
    [line] = log_file.read_text(encoding="utf-8").splitlines()
    entry = json.loads(line)
    assert set(entry) == {
        "time", "spider", "url", "duplicate_of", "distance",
        "fingerprint", "duplicate_fingerprint", "action",
    }  # fmt: skip
    assert entry["spider"] == "site"
    assert entry["url"] == site.url("/b")
    assert entry["duplicate_of"] == site.url("/a")
    assert entry["distance"] == 0
    assert entry["action"] == "drop"
    assert len(entry["fingerprint"]) == 16
    assert entry["fingerprint"] == entry["duplicate_fingerprint"]
    [kw] = received
    assert kw["response"].url == site.url("/b")
    assert kw["duplicate_of"] == site.url("/a")
    assert kw["distance"] == 0
    assert f"{kw['fingerprint']:016x}" == entry["fingerprint"]


@deferred_f_from_coro_f
async def test_invalid_setting_fails_at_start(site):
    site.serve({"/": article_html(1)})
    with pytest.raises(ValueError, match=r"SIMHASH_ACTION.*'explode'"):
        await crawl(SiteSpider, {**MW, "SIMHASH_ACTION": "explode"}, base=site.base)
    assert site.hits["/"] == 0


@deferred_f_from_coro_f
async def test_disabled(site):
    serve_dup_site(site)
    crawler = await crawl(SiteSpider, {**MW, "SIMHASH_ENABLED": False}, base=site.base)
    assert "/b" in crawler.spider.parsed
    assert crawler.stats.get_value("simhash/response_count") is None


class FailingOpenBackend(MemoryBackend):
    def open(self, spider_name):
        raise BackendError("index server unreachable")


class FlakyBackend(MemoryBackend):
    def query_and_add(self, signature, url, *, add="if_new"):
        if url.endswith(("/a", "/b", "/c")):
            raise BackendError("connection reset") from ConnectionError("reset")
        return super().query_and_add(signature, url, add=add)


@deferred_f_from_coro_f
async def test_backend_failing_at_open_stops_the_crawl(site, caplog):
    serve_dup_site(site)
    settings = {**MW, "SIMHASH_BACKEND": f"{__name__}.FailingOpenBackend"}
    crawler = await crawl(SiteSpider, settings, base=site.base)
    assert crawler.stats.get_value("finish_reason") == "simhash_backend_error"
    assert site.hits["/a1"] == 0
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("index server unreachable" in m and "SIMHASH_BACKEND" in m for m in errors)


@deferred_f_from_coro_f
async def test_backend_error_keeps_pages(site, caplog):
    serve_dup_site(site)
    settings = {**MW, "SIMHASH_BACKEND": f"{__name__}.FlakyBackend"}
    crawler = await crawl(SiteSpider, settings, base=site.base)
    assert sorted(crawler.spider.parsed) == ["/", "/a", "/a1", "/b", "/b1", "/b2", "/c"]
    assert crawler.stats.get_value("simhash/backend_error_count") == 3
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len([r for r in warnings if "connection reset" in r.getMessage()]) == 1


@deferred_f_from_coro_f
async def test_backend_error_stop(site):
    serve_dup_site(site)
    settings = {
        **MW,
        "SIMHASH_BACKEND": f"{__name__}.FlakyBackend",
        "SIMHASH_REDIS_ON_ERROR": "stop",
    }
    crawler = await crawl(SiteSpider, settings, base=site.base)
    assert crawler.stats.get_value("finish_reason") == "simhash_backend_error"
    assert crawler.stats.get_value("simhash/backend_error_count") >= 1  # + responses in flight
    assert site.hits["/a1"] == 0


@deferred_f_from_coro_f
async def test_unwritable_audit_file_stops_the_crawl(site, tmp_path, caplog):
    serve_dup_site(site)
    crawler = await crawl(SiteSpider, {**MW, "SIMHASH_LOG_FILE": str(tmp_path)}, base=site.base)
    assert crawler.stats.get_value("finish_reason") == "simhash_backend_error"
    assert any(str(tmp_path) in r.getMessage() for r in caplog.records if r.levelno == logging.ERROR)
