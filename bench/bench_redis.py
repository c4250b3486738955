"""Cost of the shared Redis index: memory per page, and pages a second from several
processes against one node and against a Redis Cluster.

Starts private servers on free loopback ports (:mod:`evaluation.redis_servers`, no
persistence): one ``redis-server``, and a 3-master Redis Cluster with a replica
each. Measures, in one run:

- Redis memory per stored page (``INFO memory`` ``used_memory`` before and after a
  bulk load of ``--size`` pages): the tables, then the URLs in the ``full`` format
  (a hash field per page) and in the compact ``hash`` format
  (``SIMHASH_REDIS_URLS = "hash"``: 8 bytes per page, packed); scrapy-redis's
  dupefilter (a set of 40-hex SHA1 fingerprints) for comparison;
- probe-and-insert calls a second (the Lua script, one EVALSHA round trip a page)
  summed over 1, 2 and 4 processes, with Redis's own time in commands per page
  (``INFO commandstats``, every master) and the client's CPU per page
  (``process_time``), the figures contention moves least. Targets: processes
  sharing one crawl's index on the single node, the same on the cluster (one crawl is one hash slot, so one master), one
  crawl per process on the cluster (the crawls spread over the masters), and one
  crawl with its tables sharded over the masters (``SIMHASH_REDIS_SHARDED``:
  several round trips a page under a lock, writers take turns).
  Each index holds ``--rate-size`` pages before the timed calls.

Rates are medians over repeats of wall-clock time on a shared 2-core machine where
the servers compete with the clients: read them as ratios between rows of one run.
Run: ``make bench-redis`` (``python -m bench.bench_redis``; ``--size 100000`` for a
quick look).
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

from evaluation.redis_servers import REDIS_CLI, REDIS_SERVER, RedisClusterServers, RedisServer
from scrapy_simhash.backends.redis import RedisSimhashIndex, import_redis
from scrapy_simhash.backends.redis_sharded import ShardedRedisSimhashIndex
from scrapy_simhash.index import TableLayout

URL = "https://www.example.com/news/2026/11/some-article-title-{:07d}.html"


def random_fingerprints(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)


def used_memory(client) -> int:
    return int(client.info("memory")["used_memory"])


def memory_per_page(
    client, size: int, layout: TableLayout, url_format: str
) -> tuple[float, float]:
    """Bulk-load ``size`` pages; return (tables B/page, URLs B/page)."""
    client.flushall()
    index = RedisSimhashIndex(
        client, "bench:simhash", layout, expected_size=size, url_format=url_format
    )
    index.open()
    fps = random_fingerprints(size, 0)
    before = used_memory(client)
    keys = index.add_many(fps)
    tables = used_memory(client) - before
    urls = [URL.format(i) for i in range(size)]
    before = used_memory(client)
    if url_format == "hash":
        index._add_url_hashes(int(keys[0]), urls)
    else:
        pipe = client.pipeline(transaction=False)
        for start in range(0, size, 20000):
            chunk = range(start, min(start + 20000, size))
            pipe.hset(index.urls_key, mapping={str(int(keys[i])): urls[i] for i in chunk})
        pipe.execute()
    return tables / size, (used_memory(client) - before) / size


def sadd_memory(client, size: int) -> float:
    client.flushall()
    before = used_memory(client)
    pipe = client.pipeline(transaction=False)
    for i in range(size):
        pipe.sadd("bench:dupefilter", hashlib.sha1(b"%d" % i).hexdigest())
        if i % 20000 == 19999:
            pipe.execute()
    pipe.execute()
    return (used_memory(client) - before) / size


# -- pages a second ------------------------------------------------------------------


def _client(url: str, cluster: bool):
    redis = import_redis()
    return (redis.RedisCluster if cluster else redis.Redis).from_url(url)


def _index(client, prefix: str, layout: TableLayout, size: int, sharded: bool):
    if sharded:
        # throughput, not the crawler's bound: wait for the lock however long
        # a descheduled holder keeps it on this loaded machine
        return ShardedRedisSimhashIndex(
            client, prefix, layout, expected_size=size, lock_wait=60, lease=60
        )
    return RedisSimhashIndex(client, prefix, layout, expected_size=size)


def _open(client, prefix: str, layout: TableLayout, size: int, sharded: bool):
    index = _index(client, prefix, layout, size, sharded)
    index.open()
    return index


def preload(url, cluster, prefixes, layout: TableLayout, size: int, sharded: bool) -> None:
    client = _client(url, cluster)
    for prefix in prefixes:
        index = _index(client, prefix, layout, size, sharded)
        index.clear()
        index.open()
        index.add_many(random_fingerprints(size, zlib.crc32(prefix.encode())))
    client.close()


def _worker(url, cluster, sharded, prefix, layout_spec, size, ops, seed, start, out) -> None:
    client = _client(url, cluster)
    index = _open(client, prefix, TableLayout.parse(layout_spec, 3), size, sharded)
    fps = random_fingerprints(ops, seed).tolist()
    index.query_and_add(fps[0], "https://www.example.com/x")  # connect, load the script
    start.wait()
    t0, cpu0 = time.perf_counter(), time.process_time()
    for fp in fps:
        index.query_and_add(fp, "https://www.example.com/x")
    out.put((time.perf_counter() - t0, time.process_time() - cpu0))
    client.close()


def _masters(url: str, cluster: bool) -> list:
    client = _client(url, cluster)
    if not cluster:
        return [client]
    return [client.get_redis_connection(node) for node in client.get_primaries()]


def reset_server_stats(url: str, cluster: bool) -> None:
    for client in _masters(url, cluster):
        client.config_resetstat()


def server_usec(url: str, cluster: bool) -> float:
    """Redis's own CPU time in commands since the last reset, over every master."""
    return float(sum(
        stats.get("usec", 0)
        for client in _masters(url, cluster)
        for stats in client.info("commandstats").values()
    ))


def rate(url, cluster, sharded, prefixes, layout, size, ops, seed) -> tuple[float, float]:
    """Calls a second summed over one process per entry of ``prefixes``, and the
    client's CPU seconds a call."""
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(len(prefixes))
    out = ctx.Queue()
    workers = [
        ctx.Process(
            target=_worker,
            args=(url, cluster, sharded, prefix, layout.spec, size, ops, seed + i, start, out),
        )
        for i, prefix in enumerate(prefixes)
    ]
    for w in workers:
        w.start()
    results = [out.get(timeout=600) for _ in workers]
    for w in workers:
        w.join()
    wall = max(seconds for seconds, _ in results)
    cpu = sum(cpu for _, cpu in results) / (len(prefixes) * ops)
    return len(prefixes) * ops / wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="pages for the memory figures")
    parser.add_argument("--rate-size", type=int, default=100_000, help="pages in each index timed")
    parser.add_argument("--ops", type=int, default=3000, help="calls per process and repeat")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if REDIS_SERVER is None or REDIS_CLI is None:
        sys.exit("redis-server is not installed (make redis-server installs Debian's package)")
    redis = import_redis()
    with tempfile.TemporaryDirectory(prefix="bench-redis-") as tmp:
        server = RedisServer(Path(tmp) / "single")
        server.directory.mkdir()
        cluster = RedisClusterServers(Path(tmp) / "cluster", masters=3, replicas=1)
        server.start()
        try:
            cluster.start()
            client = redis.Redis.from_url(server.url)
            version = client.info("server")["redis_version"]
            layout = TableLayout.plan(3, args.size)
            print(f"redis-server {version}, redis-py {redis.__version__}, k=3, "
                  f"layout {layout.spec} ({len(layout.tables)} tables)")
            print()
            print(f"Redis memory per page at {args.size:,} pages (INFO used_memory delta)")
            print(f"{'SIMHASH_REDIS_URLS':<20} {'tables B':>9} {'URLs B':>8} {'total B':>8}")
            for url_format in ("full", "hash"):
                tables, urls = memory_per_page(client, args.size, layout, url_format)
                print(f"{url_format:<20} {tables:>9.1f} {urls:>8.1f} {tables + urls:>8.1f}")
            print(f"(URLs of ~{len(URL.format(0))} characters; scrapy-redis dupefilter, "
                  f"SADD of 40-hex SHA1: {sadd_memory(client, args.size):.1f} B per member)")
            client.flushall()
            client.close()
            print()

            rate_layout = TableLayout.plan(3, args.rate_size)
            print(f"Probe-and-insert calls a second, summed over the processes (median of "
                  f"{args.repeats} x {args.ops:,} calls a process; indexes of "
                  f"{args.rate_size:,} pages, layout {rate_layout.spec})")
            print(f"{'target':<36} {'1 process':>10} {'2 processes':>12} {'4 processes':>12} "
                  f"{'server us/page':>15} {'client CPU us':>15}")
            rows = [
                ("one node, one crawl", server.url, False, False, lambda n: ["bench"] * n),
                ("cluster, one crawl (one master)", cluster.url, True, False,
                 lambda n: ["{bench}"] * n),
                ("cluster, one crawl per process", cluster.url, True, False,
                 lambda n: [f"{{crawl{i}}}" for i in range(n)]),
                ("cluster, one crawl, tables sharded", cluster.url, True, True,
                 lambda n: ["{sharded}"] * n),
            ]  # fmt: skip
            for label, url, is_cluster, sharded, names in rows:
                figures = []
                for procs in (1, 2, 4):
                    prefixes = [f"{name}:simhash" for name in names(procs)]
                    unique = sorted(set(prefixes))
                    samples, cpus, servers = [], [], []
                    for r in range(args.repeats):
                        preload(url, is_cluster, unique, rate_layout, args.rate_size, sharded)
                        reset_server_stats(url, is_cluster)
                        calls, cpu = rate(url, is_cluster, sharded, prefixes, rate_layout,
                                          args.rate_size, args.ops, seed=1000 * procs + 10 * r)
                        samples.append(calls)
                        cpus.append(cpu)
                        servers.append(server_usec(url, is_cluster) / (procs * (args.ops + 1)))
                    figures.append(statistics.median(samples))
                    if procs == 1:
                        usec = statistics.median(servers)
                        client_usec = 1e6 * statistics.median(cpus)
                print(f"{label:<36} {figures[0]:>10,.0f} {figures[1]:>12,.0f} "
                      f"{figures[2]:>12,.0f} {usec:>15.1f} {client_usec:>15.1f}")
            probe = _client(cluster.url, True)
            masters = {probe.get_node_from_key(f"{{crawl{i}}}:simhash:meta").port
                       for i in range(4)}
            sharded_index = ShardedRedisSimhashIndex(probe, "{sharded}:simhash", rate_layout)
            table_masters = {probe.get_node_from_key(key).port
                             for key in sharded_index.table_keys}
            print(f"(the 4 per-process crawls sit on {len(masters)} of the 3 masters; the "
                  f"sharded crawl's {len(sharded_index.table_keys)} tables on "
                  f"{len(table_masters)})")
            probe.close()
        finally:
            cluster.stop()
            server.stop()


if __name__ == "__main__":
    main()
