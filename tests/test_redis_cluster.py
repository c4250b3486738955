"""The Redis backend against a real Redis Cluster: 3 masters with a replica each,
started on loopback by the tests, and a failover of a crawl's master."""

from __future__ import annotations

import time

import numpy as np
import pytest
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f

from scrapy_simhash.backends import BackendError, Duplicate
from scrapy_simhash.backends.redis import RedisBackend, import_redis
from scrapy_simhash.settings import SimhashSettings
from tests.fixtures_http import crawl
from tests.test_redis import brute_force, planted_stream
from tests.test_redis_crawl import ChainSpider, redis_settings, serve_chain

pytestmark = pytest.mark.redis


def cluster_config(url: str, **settings) -> SimhashSettings:
    return SimhashSettings.from_settings(
        Settings({
            "SIMHASH_BACKEND": "redis",
            "SIMHASH_REDIS_URL": url,
            "SIMHASH_REDIS_CLUSTER": True,
            **settings,
        })
    )  # fmt: skip


def cluster_backend(url: str, **settings) -> RedisBackend:
    return RedisBackend.from_config(cluster_config(url, **settings))


def test_default_key_template_puts_a_crawl_in_one_slot(redis_cluster):
    config = cluster_config(redis_cluster.url)
    assert config.redis_key == "{%(spider)s}:simhash"
    masters = set()
    for name in ("news", "shop", "blog", "docs", "forum", "wiki"):
        backend = cluster_backend(redis_cluster.url)
        backend.open(name)
        index = backend.index
        keys = [index.meta_key, index.urls_key, *index.table_keys]
        assert {backend.client.keyslot(key) for key in keys} == {backend.client.keyslot(name)}
        masters.add(backend.client.get_node_from_key(index.meta_key).port)
        backend.close()
    assert len(masters) >= 2  # crawls spread over the masters


def test_a_template_without_hash_tag_is_refused(redis_cluster):
    backend = cluster_backend(redis_cluster.url, SIMHASH_REDIS_KEY="%(spider)s:simhash")
    with pytest.raises(BackendError, match=r"SIMHASH_REDIS_KEY .* hash tag"):
        backend.open("news")
    backend.close()


def test_exact_against_brute_force_on_the_cluster(redis_cluster):
    backend = cluster_backend(redis_cluster.url, SIMHASH_RESET=True)
    backend.open("parity")
    stored: list[tuple[int, int]] = []
    for i, fp in enumerate(planted_stream(seed=7, n=120, k=3)):
        expected = brute_force(stored, fp, 3)
        found = backend.query_and_add(fp, f"https://e/{i}")
        if expected:
            assert found is not None and found.distance == expected[0].distance
        else:
            assert found is None
            stored.append((len(stored) + 1, fp))
    assert len(backend) == len(stored)
    backend.close()


@pytest.mark.parametrize("url_format", ["full", "hash"])
def test_queue_is_indexed_through_the_masters_node(redis_cluster, url_format):
    backend = cluster_backend(redis_cluster.url, SIMHASH_REDIS_URLS=url_format, SIMHASH_RESET=True)
    backend.open(f"queue-{url_format}")
    assert backend.query_and_add(0xAB, "https://a/") is None
    backend._enqueue(0xF0F0F0, "https://q/", "if_new")
    backend._enqueue(0xAA, "https://r/", "if_new")
    assert backend.query_and_add(1 << 40, "https://b/") is None
    stats = backend.stats()
    assert stats["reindexed_count"] == 1 and stats["reindexed_duplicate_count"] == 1
    found = backend.query_and_add(0xF0F0F1, "https://c/", add="never")
    assert found == Duplicate(backend.index.url_token("https://q/"), 0xF0F0F0, 1)
    backend.close()


@deferred_f_from_coro_f
async def test_crawl_on_the_cluster(site, redis_cluster):
    serve_chain(site)
    settings = redis_settings(redis_cluster.url, SIMHASH_REDIS_CLUSTER=True, SIMHASH_RESET=True)
    crawler = await crawl(ChainSpider, settings, base=site.base)
    assert sorted(crawler.spider.parsed) == ["/", "/a", "/b"]
    assert crawler.stats.get_value("simhash/duplicate_count") == 2
    client = import_redis().RedisCluster.from_url(redis_cluster.url)
    assert client.hlen("{chain}:simhash:urls") == 3
    client.close()


def test_failover_of_the_crawls_master(redis_cluster_to_break, caplog):
    """Kill the master holding a crawl's slot mid-crawl: calls fail (each within the
    timeout, most at once during the hold-off), pages are queued; once a replica has
    taken over (cluster-node-timeout 1 s here), the queue is indexed. Pages the master
    acknowledged before it died are on the replica unless replication lagged."""
    cluster = redis_cluster_to_break
    timeout = 0.5
    backend = cluster_backend(cluster.url, SIMHASH_REDIS_TIMEOUT=timeout)
    backend.open("failover")
    fps = np.random.default_rng(3).integers(0, 2**63, size=100_000, dtype=np.uint64).tolist()
    before = 300
    for i in range(before):
        assert backend.query_and_add(fps[i], f"https://p/{i}") is None
    master = backend.client.get_node_from_key(backend.index.meta_key).port
    cluster.server_on(master).kill()
    killed = time.monotonic()
    durations, failed, i = [], 0, before
    recovered = None
    while time.monotonic() - killed < 30:
        started = time.monotonic()
        try:
            backend.query_and_add(fps[i], f"https://p/{i}")
        except BackendError:
            failed += 1
        else:
            if recovered is None and failed:
                recovered = time.monotonic() - killed
        durations.append(time.monotonic() - started)
        i += 1
        if recovered is not None and i > before + failed + 50:
            break
        time.sleep(0.01)
    assert recovered is not None, f"no answer {time.monotonic() - killed:.1f} s after the kill"
    assert backend.client.get_node_from_key(backend.index.meta_key).port != master
    # no call blocked longer than the timeout (connect to a dead port is refused at once;
    # the cluster client's slot refresh asks the live nodes)
    assert max(durations) < timeout + 0.5, sorted(durations)[-5:]
    backend.close()
    stats = backend.stats()
    assert stats["queued_count"] == failed and stats["unindexed_count"] == 0
    # what the replica kept of the pages stored before the kill
    check = cluster_backend(cluster.url)
    check.open("failover")
    lost = sum(
        check.query_and_add(fps[j], "", add="never") is None for j in range(before)
    )
    assert len(check) == i - lost
    check.close()
    print(f"failover: recovered after {recovered:.1f} s, {failed} pages queued and "
          f"indexed, {lost} of {before} pages stored before the kill lost")
    assert lost <= 2
    assert "vanished" not in caplog.text  # the replica had the index
