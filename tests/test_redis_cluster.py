"""The Redis backend against a real Redis Cluster: 3 masters with a replica each,
started on loopback by the tests, and a failover of a crawl's master."""

from __future__ import annotations

import time

import numpy as np
import pytest
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f

from scrapy_simhash.fingerprinting import Signature
from scrapy_simhash.fingerprinting.signature import SKETCH_BINS
from scrapy_simhash.backends import BackendError, Duplicate
from scrapy_simhash.backends.redis import RedisBackend, import_redis
from scrapy_simhash.settings import SimhashSettings
from tests.fixtures_http import crawl
from tests.test_redis import brute_force, planted_stream
from tests.test_redis_crawl import ChainSpider, redis_settings, serve_chain

pytestmark = pytest.mark.redis

SKETCH = bytes(range(1, SKETCH_BINS + 1))


def sig(fp: int) -> Signature:
    """A signature whose sketch confirms every other one made here."""
    return Signature(int(fp), SKETCH)


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
    settings.setdefault("SIMHASH_MAX_DISTANCE", 3)  # the brute force here is k=3's
    return RedisBackend.from_config(cluster_config(url, **settings))


def test_default_key_template_puts_a_crawl_in_one_slot(redis_cluster):
    config = cluster_config(redis_cluster.url)
    assert config.redis_key == "{%(spider)s}:simhash"
    masters = set()
    for name in ("news", "shop", "blog", "docs", "forum", "wiki"):
        backend = cluster_backend(redis_cluster.url)
        backend.open(name)
        index = backend.index
        keys = [index.meta_key, index.urls_key, index.sketch_block(7), index.log_block(3)]
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
        found = backend.query_and_add(sig(fp), f"https://e/{i}")
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
    assert backend.query_and_add(sig(0xAB), "https://a/") is None
    backend._enqueue(0xF0F0F0, "https://q/", "if_new", SKETCH)
    backend._enqueue(0xAA, "https://r/", "if_new", SKETCH)
    assert backend.query_and_add(sig(1 << 40), "https://b/") is None
    stats = backend.stats()
    assert stats["redis/reindexed_count"] == 1 and stats["redis/reindexed_duplicate_count"] == 1
    found = backend.query_and_add(sig(0xF0F0F1), "https://c/", add="never")
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
        assert backend.query_and_add(sig(fps[i]), f"https://p/{i}") is None
    node = backend.client.get_node_from_key(backend.index.meta_key)
    master = node.port
    # The replica has those pages before the kill: WAIT until it acknowledged them (on a
    # loaded machine its first sync can take seconds; killed before it, the replica
    # would take over with no index at all: 300 of 300 lost in one run at load 3). Each
    # WAIT returns within the client's 0.5 s socket timeout (one WAIT of 20 s timed out).
    connection = backend.client.get_redis_connection(node)
    deadline = time.monotonic() + 20
    while connection.execute_command("WAIT", 1, 200) < 1:
        assert time.monotonic() < deadline, "the replica never acknowledged the pages"
    cluster.server_on(master).kill()
    killed = time.monotonic()
    durations, failed, i = [], 0, before
    recovered = None
    while time.monotonic() - killed < 30:
        started = time.monotonic()
        try:
            backend.query_and_add(sig(fps[i]), f"https://p/{i}")
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
    assert stats["redis/queued_count"] == failed and stats["redis/unindexed_count"] == 0
    # what the replica kept of the pages stored before the kill
    check = cluster_backend(cluster.url)
    check.open("failover")
    lost = sum(
        check.query_and_add(sig(fps[j]), "", add="never") is None for j in range(before)
    )
    assert len(check) == i - lost
    check.close()
    print(f"failover: recovered after {recovered:.1f} s, {failed} pages queued and "
          f"indexed, {lost} of {before} pages stored before the kill lost")
    assert lost <= 2
    assert "vanished" not in caplog.text  # the replica had the index


# -- one crawl's tables over several masters (SIMHASH_REDIS_SHARDED) ---------------


def test_sharded_tables_spread_and_stay_exact(redis_cluster):
    layout = "8,8,8,8,8,8,8,8"  # 8 tables, so that they land on every master
    backend = cluster_backend(
        redis_cluster.url, SIMHASH_REDIS_SHARDED=True, SIMHASH_RESET=True, SIMHASH_LAYOUT=layout
    )
    backend.open("sharded")
    index = backend.index
    masters = {backend.client.get_node_from_key(key).port for key in index.table_keys}
    assert len(masters) >= 2, masters
    stored: list[tuple[int, int]] = []
    urls: dict[int, str] = {}
    for i, fp in enumerate(planted_stream(seed=9, n=120, k=3)):
        expected = brute_force(stored, fp, 3)
        found = backend.query_and_add(sig(fp), f"https://e/{i}")
        if expected:
            nearest = expected[0]
            assert found == Duplicate(urls[nearest.key], nearest.fingerprint, nearest.distance)
        else:
            assert found is None
            stored.append((len(stored) + 1, fp))
            urls[len(stored)] = f"https://e/{i}"
    assert len(backend) == len(stored)
    # a one-slot process refuses to join the sharded index
    with pytest.raises(BackendError, match="tables="):
        cluster_backend(redis_cluster.url, SIMHASH_LAYOUT=layout).open("sharded")
    backend.close()


def _sharded_insert_all(url: str, items, start, results) -> None:
    backend = cluster_backend(url, SIMHASH_REDIS_SHARDED=True, SIMHASH_REDIS_TIMEOUT=5)
    backend.open("race")
    start.wait()
    for pair, fp in items:
        results.put((pair, int(backend.query_and_add(sig(fp), str(pair)) is None)))
    results.put(("lease_lost", backend.stats().get("redis/lease_lost_count", 0)))
    backend.close()


def test_sharded_concurrent_writers_keep_each_pair_once(redis_cluster):
    """Two processes insert the two members of 150 near-duplicate pairs at the same
    moment: the lock makes the probe-then-insert across slots keep each pair once."""
    import multiprocessing

    from tests.test_redis import _pairs

    setup = cluster_backend(redis_cluster.url, SIMHASH_REDIS_SHARDED=True, SIMHASH_RESET=True)
    setup.open("race")
    setup.close()
    left, right = _pairs(150, seed=21)
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(2)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_sharded_insert_all, args=(redis_cluster.url, side, start, out))
        for side in (left, right)
    ]
    for proc in procs:
        proc.start()
    results = [out.get(timeout=120) for _ in range(302)]
    for proc in procs:
        proc.join(30)
        assert proc.exitcode == 0
    kept = [0] * 150
    for pair, new in results:
        if pair != "lease_lost":
            kept[pair] += new
    assert kept == [1] * 150
    assert sum(v for p, v in results if p == "lease_lost") == 0


def test_sharded_dead_writer_holds_the_others_for_its_lease_only(redis_cluster):
    """A writer that died holding the lock: others fail within the wait (the page is
    queued, as in an outage) until its lease ends, then go on and index the queue."""
    backend = cluster_backend(
        redis_cluster.url, SIMHASH_REDIS_SHARDED=True, SIMHASH_RESET=True,
        SIMHASH_REDIS_TIMEOUT=0.2,
    )  # fmt: skip
    backend.open("dead")
    assert backend.query_and_add(sig(0xF00), "https://a/") is None
    backend.client.set(backend.index.lock_key, b"dead-writer", px=1500)
    started = time.monotonic()
    with pytest.raises(BackendError, match="held the lock"):
        backend.query_and_add(sig(0xF01), "https://b/")
    assert time.monotonic() - started < 0.2 + 0.3
    time.sleep(1.6)  # its lease is over (and so is the hold-off)
    assert backend.query_and_add(sig(0xABC << 40), "https://c/") is None
    stats = backend.stats()
    assert stats["redis/queued_count"] == 1 and stats["redis/reindexed_duplicate_count"] == 1
    backend.close()
