"""Cost of the shared Redis index, next to scrapy-redis's own per-request cost.

Starts a private ``redis-server`` on a free loopback port (no persistence) and
measures, against it, in one run:

- Redis memory per stored fingerprint at 1M fingerprints (``INFO memory``
  ``used_memory`` before and after a bulk load), tables alone and with URLs,
  for a few bucket widths; scrapy-redis's dupefilter (a set of 40-hex SHA1
  fingerprints) at 1M members for comparison;
- probe-and-insert round trips per second (the Lua script, one EVALSHA per
  page) against the 1M index, from one and from two processes; ``SADD`` of a
  40-hex fingerprint (scrapy-redis's ``request_seen``) and ``PING`` the same way.

Rates are medians over repeats; the machine is shared, so read them as ratios
between rows measured in the same run. Run: ``make bench-redis`` (or
``python -m bench.bench_redis --size 100000`` for a quick look).
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from scrapy_simhash.index import TableLayout
from scrapy_simhash.backends.redis import RedisSimhashIndex, import_redis
from tests.fixtures_redis import REDIS_SERVER, RedisServer

URL = "https://www.example.com/news/2026/11/some-article-title-{:07d}.html"


def random_fingerprints(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)


def used_memory(client) -> int:
    return int(client.info("memory")["used_memory"])


def load_index(client, size: int, layout: TableLayout, bucket_bits: int | None, seed: int = 0):
    """Bulk-load ``size`` random fingerprints; return (index, tables B/fp, URLs B/fp)."""
    client.flushall()
    index = RedisSimhashIndex(
        client, "bench:simhash", layout, expected_size=size, bucket_bits=bucket_bits
    )
    index.open()
    fps = random_fingerprints(size, seed)
    before = used_memory(client)
    index.add_many(fps)
    tables = used_memory(client) - before
    before = used_memory(client)
    urls = [URL.format(i) for i in range(size)]
    pipe = client.pipeline(transaction=False)
    for start in range(0, size, 20000):
        chunk = range(start, min(start + 20000, size))
        pipe.hset(index.urls_key, mapping={str(i + 1): urls[i] for i in chunk})
    pipe.execute()
    url_bytes = used_memory(client) - before
    return index, tables / size, url_bytes / size


def sadd_memory(client, size: int) -> float:
    client.delete("bench:dupefilter")
    before = used_memory(client)
    pipe = client.pipeline(transaction=False)
    for i in range(size):
        pipe.sadd("bench:dupefilter", hashlib.sha1(b"%d" % i).hexdigest())
        if i % 20000 == 19999:
            pipe.execute()
    pipe.execute()
    return (used_memory(client) - before) / size


# -- round trips -------------------------------------------------------------------


def _worker(kind: str, url: str, layout_spec: str, ops: int, seed: int, start, out) -> None:
    redis = import_redis()
    client = redis.Redis.from_url(url)
    if kind == "simhash":
        index = RedisSimhashIndex(client, "bench:simhash", TableLayout.parse(layout_spec, 3))
        index.open()
        items = random_fingerprints(ops, seed).tolist()
        call = lambda fp: index.query_and_add(fp, "https://www.example.com/x")  # noqa: E731
    elif kind == "sadd":
        items = [hashlib.sha1(b"%d-%d" % (seed, i)).hexdigest() for i in range(ops)]
        call = lambda fp: client.sadd("bench:dupefilter", fp)  # noqa: E731
    else:
        items = [None] * ops
        call = lambda _: client.ping()  # noqa: E731
    call(items[0])  # connect, load the script
    start.wait()
    t0 = time.perf_counter()
    for item in items:
        call(item)
    out.put(time.perf_counter() - t0)
    client.close()


def server_usec(client, command: str) -> float:
    """Redis's own CPU per call of ``command`` since the last CONFIG RESETSTAT."""
    stats = client.info("commandstats").get(f"cmdstat_{command}", {})
    return float(stats.get("usec_per_call", float("nan")))


def rate(kind: str, url: str, layout_spec: str, ops: int, procs: int, seed: int) -> float:
    """Calls per second summed over ``procs`` concurrent processes."""
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(procs)
    out = ctx.Queue()
    workers = [
        ctx.Process(target=_worker, args=(kind, url, layout_spec, ops, seed + i, start, out))
        for i in range(procs)
    ]
    for w in workers:
        w.start()
    seconds = [out.get(timeout=600) for _ in workers]
    for w in workers:
        w.join()
    return procs * ops / max(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="fingerprints in the index")
    parser.add_argument("--ops", type=int, default=5000, help="calls per process and repeat")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if REDIS_SERVER is None:
        sys.exit("redis-server is not installed (make redis-server installs Debian's package)")
    redis = import_redis()
    with tempfile.TemporaryDirectory(prefix="bench-redis-") as tmp:
        server = RedisServer(Path(tmp))
        server.start()
        try:
            client = redis.Redis.from_url(server.url)
            version = client.info("server")["redis_version"]
            layout = TableLayout.plan(3, args.size)
            print(f"redis-server {version}, redis-py {redis.__version__}, k=3, "
                  f"layout {layout.spec} ({len(layout.tables)} tables), "
                  f"{args.size:,} fingerprints")
            print(f"in-process arrays (TableLayout.memory_bytes): "
                  f"{layout.memory_bytes(args.size) / args.size:.0f} B per fingerprint, no URLs")
            print()
            print("Redis memory per stored fingerprint (INFO memory used_memory delta)")
            print(f"{'bucket bits':>11} {'avg bucket':>10} {'tables B/fp':>12} {'URLs B/fp':>10} "
                  f"{'server us/call':>15} {'calls/s':>8}")
            chosen = None
            default_bits = RedisSimhashIndex(
                client, "x", layout, expected_size=args.size
            ).bucket_bits
            for bits in sorted({default_bits - 2, default_bits - 1, default_bits}):
                index, table_bytes, url_bytes = load_index(client, args.size, layout, bits)
                per_bucket = args.size / 2 ** min(index.bucket_bits, min(layout.p_values))
                client.config_resetstat()
                one = statistics.median(
                    rate("simhash", server.url, layout.spec, args.ops, 1, seed=100 + r)
                    for r in range(args.repeats)
                )
                usec = server_usec(client, "evalsha")
                mark = " (default)" if bits == default_bits else ""
                print(f"{index.bucket_bits:>11} {per_bucket:>10.1f} {table_bytes:>12.1f} "
                      f"{url_bytes:>10.1f} {usec:>15.1f} {one:>8,.0f}{mark}")
                if bits == default_bits:
                    chosen = (table_bytes, url_bytes)
            sadd_bytes = sadd_memory(client, args.size)
            print(f"scrapy-redis dupefilter, SADD of 40-hex SHA1: {sadd_bytes:.1f} B per member")
            print()
            # leave the default-width 1M index in place for the round-trip figures
            load_index(client, args.size, layout, None)
            print(f"Round trips per second against the {args.size:,} index "
                  f"(median of {args.repeats} x {args.ops:,} calls per process)")
            print(f"{'call':<44} {'1 process':>10} {'2 processes':>12} {'server us/call':>15}")
            rows = [
                ("simhash probe+insert (EVALSHA, Lua)", "simhash"),
                ("scrapy-redis request_seen (SADD 40-hex)", "sadd"),
                ("PING (round-trip floor)", "ping"),
            ]
            rates = {}
            commands = {"simhash": "evalsha", "sadd": "sadd", "ping": "ping"}
            for label, kind in rows:
                client.config_resetstat()
                r1, r2 = (
                    statistics.median(
                        rate(kind, server.url, layout.spec, args.ops, procs, 100 * procs + 2 * i)
                        for i in range(args.repeats)
                    )
                    for procs in (1, 2)
                )
                rates[kind] = (r1, r2)
                usec = server_usec(client, commands[kind])
                print(f"{label:<44} {r1:>10,.0f} {r2:>12,.0f} {usec:>15.1f}")
            s1, sadd1 = rates["simhash"][0], rates["sadd"][0]
            print()
            print(f"per page, one process: simhash {1e6 / s1:.0f} us, SADD {1e6 / sadd1:.0f} us "
                  f"({s1 / sadd1:.2f}x the SADD rate)")
            if chosen:
                print(f"per fingerprint at {args.size:,}: {chosen[0]:.0f} B tables + "
                      f"{chosen[1]:.0f} B URL = {sum(chosen):.0f} B; SADD {sadd_bytes:.0f} B")
            client.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
