"""Crawls that share a Redis index: in-process crawls and two ``scrapy crawl`` processes."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import scrapy
from scrapy.utils.defer import deferred_f_from_coro_f

from scrapy_simhash.backends import BackendError
from scrapy_simhash.backends.redis import RedisBackend, import_redis
from scrapy_simhash.backends.redis_index import read_index_pages
from scrapy_simhash.fingerprinting.signature import confirms_many
from tests.fixtures_http import article_html, crawl
from tests.fixtures_redis import fill_up, make_room

pytestmark = [pytest.mark.redis, pytest.mark.scrapy]

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "example_project"
MW = {"SPIDER_MIDDLEWARES": {"scrapy_simhash.SimhashMiddleware": 100}}


class ChainSpider(scrapy.Spider):
    """Follows every link from ``/``; calls ``on_parse(path)`` for each parsed page."""

    name = "chain"

    def __init__(self, base: str, on_parse=None, **kwargs):
        super().__init__(**kwargs)
        self.base = base
        self.on_parse = on_parse or (lambda path: None)
        self.parsed: list[str] = []

    async def start(self):
        yield scrapy.Request(self.base + "/", dont_filter=True)

    def parse(self, response):
        path = response.url[len(self.base) :]
        self.parsed.append(path)
        self.on_parse(path)
        for href in response.css("a::attr(href)").getall():
            yield scrapy.Request(self.base + href)


def serve_chain(site) -> None:
    """``/`` links /a, /b, /c, /d in order; /c repeats /a's text, /d repeats /b's
    (the same visible text: a site's first pages are dropped only as exact copies,
    before its template is learned)."""
    site.serve(
        {
            "/": article_html(1, links=("/a", "/b", "/c", "/d")),
            "/a": article_html(2),
            "/b": article_html(3),
            "/c": article_html(2),
            "/d": article_html(3),
        }
    )


def redis_settings(url: str, **extra) -> dict:
    return {**MW, "SIMHASH_BACKEND": "redis", "SIMHASH_REDIS_URL": url, **extra}


@deferred_f_from_coro_f
async def test_two_crawls_share_the_index(site, redis_url, redis_client):
    serve_chain(site)
    first = await crawl(ChainSpider, redis_settings(redis_url), base=site.base)
    assert sorted(first.spider.parsed) == ["/", "/a", "/b"]
    assert first.stats.get_value("simhash/duplicate_count") == 2
    assert first.stats.get_value("simhash/index_size") == 3
    # a later crawl of the same spider joins the kept keys: every page is known;
    # a page at its own URL is kept (never a copy of itself), the copies are dropped
    second = await crawl(ChainSpider, redis_settings(redis_url), base=site.base)
    assert sorted(second.spider.parsed) == ["/", "/a", "/b"]
    assert second.stats.get_value("simhash/initial_index_size") == 3
    assert second.stats.get_value("simhash/self_match_count") == 3
    assert second.stats.get_value("simhash/duplicate_count") == 2
    assert redis_client.hlen("chain:simhash:urls") == 3
    # SIMHASH_RESET starts it empty again
    third = await crawl(ChainSpider, redis_settings(redis_url, SIMHASH_RESET=True), base=site.base)
    assert sorted(third.spider.parsed) == ["/", "/a", "/b"]


@deferred_f_from_coro_f
async def test_unreachable_redis_fails_at_start(site):
    from tests.fixtures_redis import _free_port

    serve_chain(site)
    url = f"redis://127.0.0.1:{_free_port()}"
    settings = redis_settings(url, REDIS_PARAMS={"socket_connect_timeout": 1})
    with pytest.raises(BackendError, match=f"Cannot reach Redis at {url}"):
        await crawl(ChainSpider, settings, base=site.base)
    assert site.hits["/"] == 0


@deferred_f_from_coro_f
async def test_mismatched_layout_stops_the_crawl(site, redis_url, caplog):
    serve_chain(site)
    await crawl(ChainSpider, redis_settings(redis_url), base=site.base)
    settings = redis_settings(redis_url, SIMHASH_LAYOUT="8,8,8,8,8,8,8,8")
    with pytest.raises(BackendError, match="was built with layout="):
        await crawl(ChainSpider, settings, base=site.base)  # stopped before it starts
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("was built with layout=" in m for m in errors), errors


class TimedRedisBackend(RedisBackend):
    """The Redis backend, timing every call the middleware makes (wall clock)."""

    durations: list[float] = []

    def query_and_add(self, fingerprint, url, *, add="if_new"):
        started = time.monotonic()
        try:
            return super().query_and_add(fingerprint, url, add=add)
        finally:
            self.durations.append(time.monotonic() - started)


def redis_stats(crawler) -> dict:
    return {
        key.split("/")[-1]: value
        for key, value in crawler.stats.get_stats().items()
        if key.startswith("simhash/redis/")
    }


@pytest.mark.parametrize("on_error", ["keep", "stop"])
@deferred_f_from_coro_f
async def test_redis_stopped_mid_crawl(site, redis_server_factory, caplog, on_error):
    """Killed for good after the first page: the rest is kept unchecked, queued, and
    reported as never indexed; the crawl does not end as a plain "finished"."""
    serve_chain(site)
    server = redis_server_factory()

    def stop_after_home(path: str) -> None:
        if path == "/":
            server.kill()

    settings = redis_settings(server.url, SIMHASH_REDIS_ON_ERROR=on_error)
    crawler = await crawl(ChainSpider, settings, base=site.base, on_parse=stop_after_home)
    stats = crawler.stats
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("Simhash index error" in m and "Redis at" in m for m in warnings), warnings
    assert any("never indexed" in m for m in errors), errors
    if on_error == "keep":
        # nothing could be checked: every page kept, each failure counted and queued
        assert sorted(crawler.spider.parsed) == ["/", "/a", "/b", "/c", "/d"]
        assert stats.get_value("simhash/backend_error_count") == 4
        assert redis_stats(crawler)["queued_count"] == 4
        assert redis_stats(crawler)["unindexed_count"] == 4
        assert stats.get_value("finish_reason") == "simhash_unchecked"
        assert any("4 of 5 pages (80.0%)" in m for m in errors), errors
    else:
        assert stats.get_value("finish_reason") == "simhash_backend_error"
        assert stats.get_value("simhash/backend_error_count") >= 1
        assert "/c" not in crawler.spider.parsed


@deferred_f_from_coro_f
async def test_outage_mid_crawl_indexed_when_redis_returns(site, redis_server_factory, caplog):
    """Down after the first page, back two pages later: the pages kept meanwhile are
    indexed when it answers again (here at close, the crawl being short), /c and /d
    found then to repeat /a and /b (kept, counted), and the index ends whole."""
    serve_chain(site)
    server = redis_server_factory("--appendonly", "yes", "--appendfsync", "always")
    parsed: list[str] = []

    def outage(path: str) -> None:
        parsed.append(path)
        if len(parsed) == 1:
            server.kill()
        elif len(parsed) == 3:
            server.start()

    settings = redis_settings(server.url, SIMHASH_MAX_UNCHECKED_SHARE=1)
    crawler = await crawl(ChainSpider, settings, base=site.base, on_parse=outage)
    assert sorted(crawler.spider.parsed) == ["/", "/a", "/b", "/c", "/d"]
    counts = redis_stats(crawler)
    assert counts["queued_count"] == 4 and counts["unindexed_count"] == 0
    assert counts["reindexed_count"] == 2 and counts["reindexed_duplicate_count"] == 2
    assert crawler.stats.get_value("simhash/index_size") == 3
    assert crawler.stats.get_value("finish_reason") == "finished"  # share allowed: 1
    client = import_redis().Redis.from_url(server.url)
    urls = sorted(u.decode()[len(site.base) :] for u in client.hvals("chain:simhash:urls"))
    client.close()
    assert urls in (["/", "/a", "/b"], ["/", "/a", "/d"], ["/", "/b", "/c"], ["/", "/c", "/d"])


@deferred_f_from_coro_f
async def test_hung_redis_never_stalls_the_crawl_beyond_the_timeout(site, redis_server_factory):
    """SIGSTOP for 1.5 s during a 30-page crawl: no call waits more than the timeout,
    a few calls wait at all (hold-off), and every page is indexed once afterwards."""
    pages = {f"/p{i}": article_html(100 + i) for i in range(30)}
    pages["/"] = article_html(1, links=tuple(pages))
    site.serve(pages)
    server = redis_server_factory()
    timeout = 0.25
    TimedRedisBackend.durations = []
    resumer = threading.Timer(1.5, server.resume)

    def hang_after_home(path: str) -> None:
        if path == "/":
            server.pause()
            resumer.start()

    settings = {
        **redis_settings(server.url, SIMHASH_REDIS_TIMEOUT=timeout),
        "SIMHASH_BACKEND": TimedRedisBackend,
        "SIMHASH_MAX_UNCHECKED_SHARE": 1,
        "CONCURRENT_REQUESTS": 1,
        "DOWNLOAD_DELAY": 0.1,
    }
    try:
        crawler = await crawl(ChainSpider, settings, base=site.base, on_parse=hang_after_home)
    finally:
        resumer.cancel()
        server.resume()
    durations = TimedRedisBackend.durations
    assert len(durations) == 31
    assert max(durations) < timeout + 0.3, durations
    waited = [d for d in durations if d > timeout / 2]
    assert 1 <= len(waited) <= 3, durations  # the hold-off spares the others
    counts = redis_stats(crawler)
    assert counts["queued_count"] >= len(waited) and counts["unindexed_count"] == 0
    # the page whose answer was lost is stored once: its insert never ran (the read
    # timed out), or it ran and re-indexing finds the page under its own URL
    indexed = counts.get("reindexed_count", 0) + counts.get("reindexed_already_stored_count", 0)
    assert indexed == counts["queued_count"], counts
    assert crawler.stats.get_value("simhash/index_size") == 31  # each page once
    assert len(crawler.spider.parsed) == 31
    print(f"hung 1.5 s: {len(durations)} calls, {len(waited)} waited, longest "
          f"{max(durations):.3f} s (timeout {timeout} s), {counts}")


@deferred_f_from_coro_f
async def test_full_redis_whole_crawl_checked_not_stored(site, redis_server_factory, caplog):
    """A Redis full (noeviction) for the whole crawl: pages are checked against what
    is stored; none can be stored; the crawl says so (ERROR, finish reason)."""
    server = redis_server_factory("--maxmemory", "4mb", "--maxmemory-policy", "noeviction")
    client = import_redis().Redis.from_url(server.url)
    # the index exists (an earlier crawl stored /a's text), then Redis fills up
    site.serve({"/": article_html(2)})
    await crawl(ChainSpider, redis_settings(server.url), base=site.base)
    serve_chain(site)
    filled = fill_up(client)
    crawler = await crawl(ChainSpider, redis_settings(server.url), base=site.base)
    # /a and /c (same text) are known; /, /b, /d were kept, and /d repeats /b unnoticed
    assert sorted(crawler.spider.parsed) == ["/", "/b", "/d"]
    assert crawler.stats.get_value("simhash/duplicate_count") == 2
    counts = redis_stats(crawler)
    assert counts["unstored_count"] == 3 and counts["unindexed_count"] == 3
    assert crawler.stats.get_value("finish_reason") == "simhash_unchecked"
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("3 pages kept while Redis" in m for m in errors), errors
    # with room again, the next crawl stores them
    make_room(client, filled)
    again = await crawl(ChainSpider, redis_settings(server.url), base=site.base)
    assert sorted(again.spider.parsed) == ["/", "/b"]
    assert again.stats.get_value("simhash/index_size") == 3  # old /, new / and /b
    client.close()


def test_unreachable_redis_at_start_exits_non_zero(tmp_path):
    """``scrapy crawl`` with no Redis: the error names SIMHASH_REDIS_URL, exit status 1,
    and no retries (one connection attempt of at most SIMHASH_REDIS_TIMEOUT)."""
    from tests.fixtures_redis import _free_port

    url = f"redis://127.0.0.1:{_free_port()}"
    proc = _scrapy_crawl("http://127.0.0.1:9/", url, tmp_path, "down")
    assert proc.wait(120) != 0
    log = (tmp_path / "down.log").read_text()
    assert f"Cannot reach Redis at {url} (SIMHASH_REDIS_URL)" in log, log[-3000:]
    # (that the error is one line without a traceback is the Scrapy layer's test)


# -- two `scrapy crawl` processes of the example project --------------------------


def _scrapy_crawl(start_url: str, redis_url: str, tmp: Path, name: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(EXAMPLE)])}
    args = [
        sys.executable, "-m", "scrapy", "crawl", "demo",
        "-a", f"start_url={start_url}",
        "-s", "SIMHASH_BACKEND=redis",
        "-s", f"SIMHASH_REDIS_URL={redis_url}",
        "-s", f"SIMHASH_LOG_FILE={tmp / (name + '.drops.jsonl')}",
        "-s", f"DEMO_STATS_FILE={tmp / (name + '.stats.json')}",
        "-s", "LOG_LEVEL=INFO",
        "-s", "CONCURRENT_REQUESTS=2",
        # a loaded machine may hold a Redis answer for longer than the default 0.5 s,
        # and _start_together holds the first request until the other crawl starts
        "-s", "SIMHASH_REDIS_TIMEOUT=10",
        "-s", "DOWNLOAD_TIMEOUT=600",
    ]  # fmt: skip
    log = open(tmp / f"{name}.log", "w")  # noqa: SIM115
    return subprocess.Popen(args, cwd=EXAMPLE, env=env, stdout=log, stderr=subprocess.STDOUT)


def _start_together(site, monkeypatch, parties: int = 2, wait: float = 300.0) -> None:
    """Hold each crawl's first request (robots.txt) until ``parties`` crawls made
    theirs: the crawls then run side by side, however late a loaded machine
    starts one of them (the first could otherwise be over before the second
    begins, and the second would drop nothing)."""
    handle = site.handle
    arrived = threading.Condition()
    count = [0]

    def gated(path: str):
        if path == "/robots.txt":
            with arrived:
                count[0] += 1
                arrived.notify_all()
                arrived.wait_for(lambda: count[0] >= parties, timeout=wait)
        return handle(path)

    monkeypatch.setattr(site, "handle", gated)


@pytest.mark.skipif(not (EXAMPLE / "scrapy.cfg").exists(), reason="example_project is missing")
def test_two_scrapy_processes_share_one_index(redis_url, redis_client, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    from demo.site import classify, serve

    with serve(seed=5) as demo_site:
        _start_together(demo_site, monkeypatch)
        start = demo_site.base_url + "/"
        procs = [_scrapy_crawl(start, redis_url, tmp_path, name) for name in ("one", "two")]
        for proc, name in zip(procs, ("one", "two")):
            # a generous budget: a hung crawl still fails, a slow machine does not
            assert proc.wait(900) == 0, (tmp_path / f"{name}.log").read_text()[-3000:]
        served = list(demo_site.served)

    kept = [url.decode() for url in redis_client.hvals("demo:simhash:urls")]
    events = [
        json.loads(line)
        for name in ("one", "two")
        for line in (tmp_path / f"{name}.drops.jsonl").read_text().splitlines()
        if json.loads(line)["event"] != "skip"  # requests skipped by URL rules (issue 13)
    ]
    drops = [e for e in events if e["event"] == "drop"]
    stats = [json.loads((tmp_path / f"{n}.stats.json").read_text()) for n in ("one", "two")]

    # every page was fingerprinted once: either kept in the shared index or dropped,
    # or passed through when the other process had indexed its very URL, or delivered
    # for a link no page this process delivered links to (each process knows its own)
    checked = sum(s.get("simhash/response_count", 0) for s in stats)
    passed = sum(
        s.get("simhash/kept_dont_filter_count", 0) + s.get("simhash/self_match_count", 0)
        + s.get("simhash/kept_for_links_count", 0)
        for s in stats
    )
    assert checked == len(kept) + len(drops) + passed
    assert sum(s.get("simhash/backend_error_count", 0) for s in stats) == 0
    # no two kept pages are duplicates as the crawl decides (fingerprints within the
    # index's k, sketches confirming), although both processes fetched every page.
    # (A page the demo serves again with another sidebar is a near copy that the v7
    # decision keeps while a process has not learned the site's template: the kept
    # pages may be close in fingerprint, never a confirmed pair.)
    pages = read_index_pages(redis_client, "demo:simhash")  # the log, as the CLI reads it
    fps, sketches = pages.fingerprints, pages.sketches
    keys = np.arange(1, len(fps) + 1)
    assert len(fps) == len(kept)
    k = int(redis_client.hget("demo:simhash:meta", "k"))
    distances = np.bitwise_count(fps[:, None] ^ fps[None, :])
    np.fill_diagonal(distances, 64)
    first, second = np.nonzero(np.triu(distances <= k))
    assert sketches.any(axis=1).all()  # every page stored with its sketch
    confirmed = confirms_many(sketches[first], sketches[second])
    assert not confirmed.any(), [
        (int(keys[a]), int(keys[b]), int(distances[a, b]))
        for a, b, c in zip(first, second, confirmed) if c
    ]
    views = Counter(s.url for s in served if s.status == 200)
    fetched_twice = [url for url, n in views.items() if n > 1]
    assert len(fetched_twice) > 10
    # every distinct page of the site was kept by one of the two processes
    distinct = {classify(u).group for u in kept}
    for s in served:
        if s.status == 200 and not classify(s.url).is_variant and classify(s.url).kind != "robots":
            assert classify(s.url).group in distinct, s.url
    # each drop names a page kept in the shared index, by either process
    assert drops and all(d["duplicate_of"] in kept for d in drops)
    assert all(s.get("simhash/duplicate_count", 0) > 0 for s in stats)


@deferred_f_from_coro_f
async def test_flushall_mid_crawl_is_reported(site, redis_url, redis_client, caplog):
    """FLUSHALL after the first page: the next page finds the index gone, counts it,
    creates it again and goes on deduplicating; the crawl ends with an ERROR naming
    the loss and the finish reason simhash_index_lost, not a plain "finished"."""
    serve_chain(site)

    def flush_after_home(path: str) -> None:
        if path == "/":
            redis_client.flushall()

    crawler = await crawl(
        ChainSpider, redis_settings(redis_url), base=site.base, on_parse=flush_after_home
    )
    assert sorted(crawler.spider.parsed) == ["/", "/a", "/b"]  # /c and /d still dropped
    assert crawler.stats.get_value("simhash/duplicate_count") == 2
    assert redis_stats(crawler)["index_lost_count"] == 1
    assert crawler.stats.get_value("finish_reason") == "simhash_index_lost"
    assert crawler.stats.get_value("simhash/index_size") == 2  # "/" went with the old one
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("vanished during the crawl" in m for m in errors), errors
