"""Crawls that share a Redis index: in-process crawls and two ``scrapy crawl`` processes."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import scrapy
from scrapy.utils.defer import deferred_f_from_coro_f

from scrapy_simhash.backends import BackendError
from tests.fixtures_http import article_html, crawl

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
    """``/`` links /a, /b, /c, /d in order; /c repeats /a's text, /d repeats /b's."""
    site.serve(
        {
            "/": article_html(1, links=("/a", "/b", "/c", "/d")),
            "/a": article_html(2),
            "/b": article_html(3),
            "/c": article_html(2, chrome="Sponsored"),
            "/d": article_html(3, chrome="Sponsored"),
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
    # a later crawl of the same spider joins the kept keys: every page is known
    second = await crawl(ChainSpider, redis_settings(redis_url), base=site.base)
    assert second.spider.parsed == ["/"]  # the start URL is dont_filter
    assert second.stats.get_value("simhash/initial_index_size") == 3
    assert second.stats.get_value("simhash/kept_dont_filter_count") == 1
    assert second.stats.get_value("simhash/duplicate_count") == 4
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
    settings = redis_settings(redis_url, SIMHASH_LAYOUT="11,11,11,11,10,10")
    crawler = await crawl(ChainSpider, settings, base=site.base)
    assert crawler.stats.get_value("finish_reason") == "simhash_backend_error"
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("was built with layout=" in m for m in errors), errors


@pytest.mark.parametrize("on_error", ["keep", "stop"])
@deferred_f_from_coro_f
async def test_redis_stopped_mid_crawl(site, redis_server_factory, caplog, on_error):
    serve_chain(site)
    server = redis_server_factory()

    def stop_after_home(path: str) -> None:
        if path == "/":
            server.stop()

    settings = redis_settings(
        server.url, SIMHASH_REDIS_ON_ERROR=on_error, REDIS_PARAMS={"socket_timeout": 2}
    )
    crawler = await crawl(ChainSpider, settings, base=site.base, on_parse=stop_after_home)
    stats = crawler.stats
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("Simhash index error" in m and "Redis at" in m for m in warnings), warnings
    if on_error == "keep":
        # nothing could be checked: every page kept, each failure counted
        assert sorted(crawler.spider.parsed) == ["/", "/a", "/b", "/c", "/d"]
        assert stats.get_value("simhash/backend_error_count") == 4
        assert stats.get_value("finish_reason") == "finished"
    else:
        assert stats.get_value("finish_reason") == "simhash_backend_error"
        assert stats.get_value("simhash/backend_error_count") >= 1
        assert "/c" not in crawler.spider.parsed


# -- two `scrapy crawl` processes of the example project --------------------------


def _table_fingerprints(client, prefix: str = "demo:simhash") -> np.ndarray:
    """Every fingerprint stored in the first table (each is stored once per table)."""
    blob = b"".join(client.hvals(f"{prefix}:t0"))
    entries = np.frombuffer(blob, dtype=np.dtype([("fp", ">u8"), ("key", ">u4")]))
    return entries["fp"].astype(np.uint64)


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
    ]  # fmt: skip
    log = open(tmp / f"{name}.log", "w")  # noqa: SIM115
    return subprocess.Popen(args, cwd=EXAMPLE, env=env, stdout=log, stderr=subprocess.STDOUT)


@pytest.mark.skipif(not (EXAMPLE / "scrapy.cfg").exists(), reason="example_project is missing")
def test_two_scrapy_processes_share_one_index(redis_url, redis_client, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    from demo.site import classify, serve

    with serve(seed=5) as demo_site:
        start = demo_site.base_url + "/"
        procs = [_scrapy_crawl(start, redis_url, tmp_path, name) for name in ("one", "two")]
        for proc, name in zip(procs, ("one", "two")):
            assert proc.wait(240) == 0, (tmp_path / f"{name}.log").read_text()[-3000:]
        served = list(demo_site.served)

    kept = [url.decode() for url in redis_client.hvals("demo:simhash:urls")]
    drops = [
        json.loads(line)
        for name in ("one", "two")
        for line in (tmp_path / f"{name}.drops.jsonl").read_text().splitlines()
    ]
    stats = [json.loads((tmp_path / f"{n}.stats.json").read_text()) for n in ("one", "two")]

    # every page was fingerprinted once: either kept in the shared index or dropped
    # (the start URL, dont_filter in both processes, is kept once and passed through once)
    checked = sum(s.get("simhash/response_count", 0) for s in stats)
    passed = sum(s.get("simhash/kept_dont_filter_count", 0) for s in stats)
    assert checked == len(kept) + len(drops) + passed
    assert sum(s.get("simhash/backend_error_count", 0) for s in stats) == 0
    # no two kept pages are near-duplicates, although both processes fetched every page
    fps = _table_fingerprints(redis_client)
    assert len(fps) == len(kept)
    distances = np.bitwise_count(fps[:, None] ^ fps[None, :])
    np.fill_diagonal(distances, 64)
    assert distances.min() > 3
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
