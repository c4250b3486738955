"""Real in-process crawls of a loopback site with SimhashMiddleware enabled."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import scrapy
import scrapy.cmdline
from scrapy.http import HtmlResponse
from scrapy.utils.defer import deferred_f_from_coro_f

import scrapy_simhash
from scrapy_simhash.fingerprinting import DEFAULT_MAX_DISTANCE
from scrapy_simhash.fingerprinting.signature import SKETCH_BINS
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
    """``/`` links /a, /m/a, /c; /m/a is a printer copy of /a (the same text, and
    /a's link /a1: a page the crawl reaches through /a anyway).

    (A site's first pages are dropped only as exact copies, before its template
    is learned: ``test_a_near_copy_is_dropped_once_the_template_is_learned``.)
    """
    pages = {
        "/": article_html(1, links=("/a", "/m/a", "/c")),
        "/a": article_html(2, links=("/a1",)),
        "/m/a": article_html(2, links=("/a1",)),
        "/c": article_html(3),
        "/a1": article_html(4),
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
    assert site.hits["/m/a"] == 1 and site.hits["/a1"] == 1
    assert stats.get_value("simhash/response_count") == 5
    assert stats.get_value("simhash/duplicate_count") == 1
    assert stats.get_value("simhash/duplicate_distance_count/0") == 1
    assert stats.get_value("simhash/initial_index_size") == 0
    assert stats.get_value("simhash/index_size") == 4
    assert stats.get_value("simhash/cpu_seconds") > 0
    assert stats.get_value("item_scraped_count") == 4
    assert stats.get_value("spider_exceptions/count") is None
    assert stats.get_value("finish_reason") == "finished"
    [message] = messages(caplog)
    assert message.startswith(
        f"Dropped <200 {site.url('/m/a')}>: a near-duplicate of <{site.url('/a')}> (distance 0, "
    )
    assert "SIMHASH_DEBUG = True" in message  # the first drop says how to see them all
    record = next(r for r in caplog.records if r.name == "scrapy_simhash.dropped")
    assert record.levelno == logging.INFO
    assert record.simhash["duplicate_of"] == site.url("/a")
    assert record.simhash["action"] == "drop"
    assert record.simhash["spot_signatures"] >= 6
    assert f"{record.simhash['spot_signatures']} spot signatures)" in message
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    summary = [m for m in messages(caplog, "scrapy_simhash.middleware") if "fingerprinted" in m]
    assert summary == [
        (
            "Simhash: 5 responses fingerprinted, 1 near-duplicate (action drop), 4 pages in "
            f"the index, {stats.get_value('simhash/cpu_seconds'):.3f} s of CPU"
        )
    ]
    [opened] = [m for m in messages(caplog, "scrapy_simhash.middleware") if "in the index;" in m]
    assert opened.startswith(f"scrapy-simhash {scrapy_simhash.__version__}: 0 pages in the index;")
    assert f"max_distance={DEFAULT_MAX_DISTANCE}, layout=auto," in opened and "action=drop" in opened


@deferred_f_from_coro_f
async def test_a_copy_with_a_link_of_its_own_reaches_the_spider(site, caplog):
    """A near copy that links to a page no delivered page links to is delivered,
    not dropped: dropping it would cut that page off the crawl. A copy whose
    links are all known (/m/a) is still dropped."""
    caplog.set_level(logging.DEBUG)
    serve_dup_site(site, extra={
        "/": article_html(1, links=("/a", "/m/a", "/c", "/b")),
        # /a's text, and /a's link text, but its link leads to a page of its own
        "/b": article_html(2, links=("/b1",), labels=("/a1",)),
        "/b1": article_html(5),
    })
    crawler = await crawl(SiteSpider, MW, base=site.base)
    assert sorted(crawler.spider.parsed) == ["/", "/a", "/a1", "/b", "/b1", "/c"]
    stats = crawler.stats
    assert stats.get_value("simhash/kept_for_links_count") == 1
    assert stats.get_value("simhash/duplicate_count") == 1  # /m/a
    [kept] = [r.getMessage() for r in caplog.records if "no page delivered" in r.getMessage()]
    assert kept == (f"Kept <200 {site.url('/b')}>, a near-duplicate of <{site.url('/a')}>: it "
                    f"links to <{site.url('/b1')}>, which no page delivered so far links to")


@deferred_f_from_coro_f
async def test_drop_outlinks(site):
    serve_dup_site(site)
    settings = {**MW, "SIMHASH_ACTION": "drop_outlinks"}
    crawler = await crawl(SiteSpider, settings, base=site.base)
    assert sorted(crawler.spider.parsed) == ["/", "/a", "/a1", "/c", "/m/a"]
    assert crawler.stats.get_value("simhash/outlinks_dropped_count") == 1
    assert crawler.stats.get_value("simhash/duplicate_count") == 1
    assert crawler.stats.get_value("item_scraped_count") == 5  # /b's item passes


@deferred_f_from_coro_f
async def test_log_only(site, caplog):
    caplog.set_level(logging.INFO)
    serve_dup_site(site)
    settings = {**MW, "SIMHASH_ACTION": "log", "SIMHASH_LOG_LEVEL": "WARNING"}
    crawler = await crawl(SiteSpider, settings, base=site.base)
    assert sorted(crawler.spider.parsed) == ["/", "/a", "/a1", "/c", "/m/a"]
    assert crawler.stats.get_value("simhash/duplicate_count") == 1
    assert crawler.stats.get_value("simhash/outlinks_dropped_count") is None
    record = next(r for r in caplog.records if r.name == "scrapy_simhash.dropped")
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith(f"Found <200 {site.url('/m/a')}>: a near-duplicate of")


@deferred_f_from_coro_f
async def test_dont_filter_is_kept(site):
    serve_dup_site(site)
    crawler = await crawl(SiteSpider, MW, base=site.base, dont_filter=("/m/a",))
    assert "/m/a" in crawler.spider.parsed
    assert crawler.stats.get_value("simhash/kept_dont_filter_count") == 1
    assert crawler.stats.get_value("simhash/duplicate_count") is None


@deferred_f_from_coro_f
async def test_meta_disabled_is_skipped(site):
    serve_dup_site(site)
    crawler = await crawl(SiteSpider, MW, base=site.base, no_simhash=("/m/a",))
    assert "/m/a" in crawler.spider.parsed
    assert crawler.stats.get_value("simhash/skipped_count/disabled_meta") == 1
    assert crawler.stats.get_value("simhash/response_count") == 4


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
    assert failure.response.url == site.url("/m/a")
    assert failure.duplicate_of == site.url("/a")
    assert failure.distance == 0
    assert 0 <= failure.fingerprint < 2**64
    assert crawler.stats.get_value("simhash/duplicate_count") == 1
    assert "/m/a" not in crawler.spider.parsed


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
    opened, entry, closed = map(json.loads, log_file.read_text(encoding="utf-8").splitlines())
    assert set(entry) == {
        "event", "time", "spider", "url", "duplicate_of", "distance",
        "fingerprint", "duplicate_fingerprint", "action", "spot_signatures", "sketch", "k",
    }  # fmt: skip
    assert entry["k"] == DEFAULT_MAX_DISTANCE and len(bytes.fromhex(entry["sketch"])) == SKETCH_BINS
    assert entry["event"] == "drop"
    assert entry["spider"] == "site"
    assert entry["url"] == site.url("/m/a")
    assert entry["duplicate_of"] == site.url("/a")
    assert entry["distance"] == 0
    assert entry["action"] == "drop"
    assert entry["spot_signatures"] >= 6
    assert len(entry["fingerprint"]) == 16
    assert entry["fingerprint"] == entry["duplicate_fingerprint"]
    [kw] = received
    assert kw["response"].url == site.url("/m/a")
    assert kw["duplicate_of"] == site.url("/a")
    assert kw["distance"] == 0
    assert kw["spot_signatures"] == entry["spot_signatures"]
    assert f"{kw['fingerprint']:016x}" == entry["fingerprint"]
    # a run is framed by an open and a close line
    assert opened["event"] == "open" and opened["spider"] == "site"
    assert opened["version"] == scrapy_simhash.__version__
    assert opened["index_size"] == 0
    assert opened["settings"]["max_distance"] == DEFAULT_MAX_DISTANCE and opened["settings"]["action"] == "drop"
    assert closed["event"] == "close" and closed["reason"] == "finished"
    assert (closed["responses"], closed["duplicates"], closed["index_size"]) == (5, 1, 4)
    assert opened["time"] <= entry["time"] <= closed["time"]

    # a second run appends its own framed lines
    await crawl(SignalSpider, settings, base=site.base)
    events = [json.loads(line)["event"] for line in log_file.read_text().splitlines()]
    assert events == ["open", "drop", "close"] * 2


@deferred_f_from_coro_f
async def test_invalid_setting_fails_at_start(site, caplog):
    site.serve({"/": article_html(1)})
    with pytest.raises(ValueError, match=r"SIMHASH_ACTION.*'explode'"):
        await crawl(SiteSpider, {**MW, "SIMHASH_ACTION": "explode"}, base=site.base)
    assert site.hits["/"] == 0
    assert errors(caplog) == [
        (
            "The crawl cannot start: Invalid SIMHASH_ACTION setting: 'explode' "
            "(expected one of drop, drop_outlinks, log)"
        )
    ]


@deferred_f_from_coro_f
async def test_disabled(site):
    serve_dup_site(site)
    crawler = await crawl(SiteSpider, {**MW, "SIMHASH_ENABLED": False}, base=site.base)
    assert "/m/a" in crawler.spider.parsed
    assert crawler.stats.get_value("simhash/response_count") is None


class FailingOpenBackend(MemoryBackend):
    def open(self, spider_name):
        raise BackendError("index server unreachable")


class FlakyBackend(MemoryBackend):
    def query_and_add(self, signature, url, *, add="if_new"):
        if url.endswith(("/a", "/c")):
            raise BackendError("connection reset") from ConnectionError("reset")
        return super().query_and_add(signature, url, add=add)


def errors(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


@deferred_f_from_coro_f
async def test_backend_failing_at_open_stops_the_crawl_before_it_starts(site, caplog):
    serve_dup_site(site)
    settings = {**MW, "SIMHASH_BACKEND": f"{__name__}.FailingOpenBackend"}
    with pytest.raises(BackendError, match="index server unreachable"):
        await crawl(SiteSpider, settings, base=site.base)
    assert site.hits["/"] == 0
    assert errors(caplog) == ["The crawl cannot start: index server unreachable"]


@deferred_f_from_coro_f
async def test_backend_error_keeps_pages(site, caplog):
    serve_dup_site(site)
    settings = {**MW, "SIMHASH_BACKEND": f"{__name__}.FlakyBackend"}
    crawler = await crawl(SiteSpider, settings, base=site.base)
    assert sorted(crawler.spider.parsed) == ["/", "/a", "/a1", "/c", "/m/a"]
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
async def test_unwritable_audit_file_stops_the_crawl_before_it_starts(site, tmp_path, caplog):
    serve_dup_site(site)
    with pytest.raises(OSError, match="SIMHASH_LOG_FILE"):
        await crawl(SiteSpider, {**MW, "SIMHASH_LOG_FILE": str(tmp_path)}, base=site.base)
    assert site.hits["/"] == 0
    [error] = errors(caplog)
    assert error.startswith(f"The crawl cannot start: Cannot open SIMHASH_LOG_FILE {tmp_path}:")


# -- `scrapy crawl` in a subprocess: what a user sees ------------------------------

REPO = Path(__file__).resolve().parent.parent

PROJECT_SPIDER = '''
import time
from pathlib import Path

import scrapy


class SiteSpider(scrapy.Spider):
    """Follows every link from base/; appends each path its callback reached to
    the file ``reached``; blocks in the callback of path ``hang``."""

    name = "site"

    def __init__(self, base, reached, hang="", **kwargs):
        super().__init__(**kwargs)
        self.base, self.reached, self.hang = base, reached, hang

    async def start(self):
        yield scrapy.Request(self.base + "/", dont_filter=True)

    def parse(self, response):
        path = response.url[len(self.base):]
        if path == self.hang:
            Path(self.reached + ".hang").write_text(path)
            time.sleep(120)  # killed here
        with open(self.reached, "a") as stream:
            stream.write(path + "\\n")
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href)
'''


def make_project(root: Path) -> Path:
    """A ``scrapy startproject``-like project using the add-on, in *root*."""
    package = root / "proj"
    (package / "spiders").mkdir(parents=True)
    (root / "scrapy.cfg").write_text("[settings]\ndefault = proj.settings\n")
    (package / "__init__.py").write_text("")
    (package / "spiders" / "__init__.py").write_text("")
    (package / "spiders" / "site.py").write_text(PROJECT_SPIDER)
    (package / "settings.py").write_text(
        'BOT_NAME = "proj"\n'
        'SPIDER_MODULES = ["proj.spiders"]\n'
        'ADDONS = {"scrapy_simhash.Addon": 0}\n'
        "ROBOTSTXT_OBEY = False\n"
        "TELNETCONSOLE_ENABLED = False\n"
        "REMOTE_CONTROL_ENABLED = False\n"
        "CONCURRENT_REQUESTS = 1\n"
        "RETRY_ENABLED = False\n"
        'LOG_LEVEL = "INFO"\n'
    )
    return root


def scrapy_command(project: Path, *args: str, **popen: Any) -> subprocess.Popen:
    """Start ``python -m scrapy ARGS`` in *project*, with this checkout importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), str(project), env.get("PYTHONPATH")) if p
    )
    return subprocess.Popen(
        [sys.executable, "-m", "scrapy", *args],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        **popen,
    )


def run_scrapy(project: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    proc = scrapy_command(project, *args)
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


# Scrapy >= 2.14 runs `scrapy crawl` on asyncio (AsyncCrawlerProcess), whose
# task exception the middleware marks as seen; 2.13's CrawlerProcess hands the
# failure to a Deferred that Twisted reports with its traceback after our line.
ONE_LINE = hasattr(scrapy.cmdline, "AsyncCrawlerProcess")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(
    ("setting", "names"),
    [
        (["-s", "SIMHASH_ACTION=explode"], "Invalid SIMHASH_ACTION setting: 'explode'"),
        (["-s", "SIMHASH_MAX_DISTANCE=64"], "Invalid SIMHASH_MAX_DISTANCE setting: '64'"),
        (["-s", "SIMHASH_PERSIST_PATH=bad.seen"], "bad.seen"),
        (["-s", "SIMHASH_BACKEND=redis", "-s", "SIMHASH_REDIS_URL=redis://127.0.0.1:{port}"],
         "Cannot reach Redis at"),
    ],
    ids=["bad-choice", "bad-number", "corrupt-state", "redis-unreachable"],
)
def test_start_failure_is_one_line_and_exit_1(tmp_path, site, setting, names):
    if "SIMHASH_BACKEND=redis" in setting:
        pytest.importorskip("redis")
    project = make_project(tmp_path)
    (project / "bad.seen").write_bytes(b"garbage")
    setting = [s.format(port=_free_port()) for s in setting]
    site.serve({"/": article_html(1)})
    done = run_scrapy(
        project, "crawl", "site", *setting,
        "-a", f"base={site.base}", "-a", f"reached={tmp_path / 'reached'}",
    )
    assert done.returncode == 1, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if names in line]
    assert lines, done.stderr[-3000:]
    assert "[scrapy_simhash.middleware] ERROR: The crawl cannot start: " in lines[0]
    assert site.hits["/"] == 0
    assert (project / "bad.seen").read_bytes() == b"garbage"
    if ONE_LINE:
        assert len(lines) == 1, done.stderr[-3000:]
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        assert "Task exception was never retrieved" not in done.stderr


def test_crawl_exits_0_and_logs_version_and_totals(tmp_path, site):
    project = make_project(tmp_path)
    serve_dup_site(site)
    done = run_scrapy(
        project, "crawl", "site", "-a", f"base={site.base}", "-a", f"reached={tmp_path / 'r'}"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    err = done.stderr
    assert f"[scrapy_simhash.middleware] INFO: scrapy-simhash {scrapy_simhash.__version__}: " in err
    assert "1 near-duplicate (action drop)" in err
    assert "Traceback" not in err


def templated(body: str, title: str, links: tuple[str, ...] = ()) -> str:
    """A page of a site with a shared template: a menu and a long legal footer."""
    menu = "".join(f'<li><a href="/{n}">{n.title()}</a></li>' for n in ("news", "about", "help"))
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    return (
        f"<html><head><title>{title} - Example Site</title></head><body>"
        f"<ul class='menu'>{menu}</ul><div class='main'>{anchors}{body}</div>"
        "<div class='legal'><p>Copyright 2024 Example Ltd. The contents of this site are "
        "licensed under the terms of the documentation license; all other trademarks are the "
        "property of their owners and are used for identification purposes only.</p></div>"
        "</body></html>"
    )


@deferred_f_from_coro_f
async def test_a_near_copy_is_dropped_once_the_template_is_learned(site):
    """After a few pages of a site the template is known: a copy of an article
    with an ad and another date is dropped; two short pages that differ in one
    number are both kept (too few words of their own to drop on a sketch)."""
    articles = {f"/p{i}": article_html(10 + i).split("<article>")[1].split("</article>")[0]
                for i in range(1, 5)}
    pages = {
        "/": templated("<p>Welcome.</p>", "Home", links=(*articles, "/copy", "/t1", "/t2")),
        **{path: templated(body + "<p>Published 3 March 2024.</p>", path) for path, body
           in articles.items()},
        "/copy": templated(
            "<div class='ad'><p>Buy the new lantern today, it is cheap.</p></div>"
            + articles["/p2"] + "<p>Published 9 May 2025.</p>", "/p2"),
        "/t1": templated("<h1>ADD r1, #1</h1><p>Adds 1 to register r1.</p>", "ADD r1"),
        "/t2": templated("<h1>ADD r1, #2</h1><p>Adds 2 to register r1.</p>", "ADD r1"),
    }
    site.serve(pages)
    crawler = await crawl(SiteSpider, MW, base=site.base)
    assert sorted(crawler.spider.parsed) == ["/", "/p1", "/p2", "/p3", "/p4", "/t1", "/t2"]
    assert crawler.stats.get_value("simhash/duplicate_count") == 1
