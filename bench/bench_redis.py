"""Cost of the shared Redis index at crawl scale, beside a scrapy-redis-style dupefilter.

Starts a private ``redis-server`` on a free loopback port
(:mod:`evaluation.redis_servers`, no persistence) and measures, in one run, at the
default settings (k = :data:`~scrapy_simhash.fingerprinting.signature.DEFAULT_MAX_DISTANCE`,
7, or ``--k``; the layout planned for ``SIMHASH_EXPECTED_PAGES`` = 1,000,000; a
:data:`~scrapy_simhash.fingerprinting.signature.SKETCH_BINS`-byte sketch per page):

- **memory per page** in Redis (``INFO memory`` ``used_memory`` before and after a
  bulk load of ``--size`` pages): this version's log of fingerprints and sketches
  (format 4; and the tables each crawler process holds, not in Redis), the
  previous version's tables and sketches (format 3: every table's buckets in one
  hash, sketches packed 255 to a string; the sharded placement keeps it) and the
  one before (format 2: a hash per table, a hash field per sketch), the URLs in
  the ``full`` and the compact ``hash`` format; and a scrapy-redis dupefilter's
  set of 40-hex SHA1 request fingerprints;
- **pages a second** summed over 1, 4 and 8 crawler processes against the one
  node, each process checking ``--ops`` new pages (random fingerprints and
  sketches) against an index of ``--rate-size`` pages, with **Redis's CPU per
  page** two ways (``INFO commandstats``: time inside scripts, and inside other
  commands, which counts a script's own commands again; ``INFO cpu``: the server
  process's CPU, parsing and sockets included) and the client's CPU
  per page. Rows: scrapy-redis's ``SADD`` of a SHA1 request fingerprint, this
  version (:class:`~scrapy_simhash.backends.redis_index.RedisSimhashIndex`: the
  probe in the process's tables, the log's insert script), the previous version
  (:class:`~scrapy_simhash.backends.redis_buckets.BucketRedisSimhashIndex`:
  buckets read by the client, a conditional insert script) and the one before
  (``bench/legacy_redis_query_and_add.lua``: one script probing and confirming
  inside Redis), interleaved in each repeat;
- **the slowest command** (``SLOWLOG``, every command logged but the bench's own
  ``SLOWLOG`` calls) while 3,000 distinct pages that share one fingerprint are checked
  and stored, in this version and in the previous one.

Wall-clock rates and durations are medians over repeats on a shared 2-core machine
where the server competes with the clients and with other jobs: read them as ratios
between rows of one run; the CPU figures move least. Run: ``make bench-redis``
(``python -m bench.bench_redis``; ``--size 100000`` for a quick look).
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from evaluation.redis_servers import REDIS_CLI, REDIS_SERVER, RedisServer
from scrapy_simhash.backends.redis_buckets import BucketRedisSimhashIndex
from scrapy_simhash.backends.redis_index import RedisSimhashIndex, import_redis
from scrapy_simhash.fingerprinting.signature import CONFIRM, DEFAULT_MAX_DISTANCE, SKETCH_BINS
from scrapy_simhash.index import TableLayout

URL = "https://www.example.com/news/2026/11/some-article-title-{:07d}.html"
K = DEFAULT_MAX_DISTANCE  # --k sets it
EXPECTED = 1_000_000
LEGACY_SCRIPT = Path(__file__).with_name("legacy_redis_query_and_add.lua")
_APPEND = """
for i = 1, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[1], ARGV[i]) or ''
  redis.call('HSET', KEYS[1], ARGV[i], old .. ARGV[i + 1])
end
return 0
"""


def random_fingerprints(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)


def random_sketches(n: int, seed: int) -> list[bytes]:
    rows = np.random.default_rng(seed).integers(1, 256, size=(n, SKETCH_BINS), dtype=np.uint8)
    return [row.tobytes() for row in rows]


def used_memory(client) -> int:
    return int(client.info("memory")["used_memory"])


# -- format 2: a hash per table, one script per page ---------------------------------


class LegacyIndex:
    """The previous layout and script, enough to load and probe it: keys
    ``<prefix>:t<i>`` (bucket -> packed entries), ``:sketches``, ``:urls``, ``:meta``."""

    def __init__(self, client, prefix: str, layout: TableLayout, expected: int) -> None:
        self.client = client
        self.index = BucketRedisSimhashIndex(client, prefix, layout, expected_size=expected)
        self.prefix = prefix
        self.table_keys = [f"{prefix}:t{i}" for i in range(len(layout.tables))]
        self.keys = [f"{prefix}:meta", f"{prefix}:urls", f"{prefix}:sketches", *self.table_keys]
        self.script = client.register_script(LEGACY_SCRIPT.read_text())
        self.width = self.index._table_width

    def open(self) -> None:
        self.client.hset(self.keys[0], mapping={"signature": "legacy", "size": 0})

    def clear(self) -> None:
        self.client.delete(*self.keys)

    def fields(self, fp: int) -> list[bytes]:
        return [field[self.width :] for field in self.index.bucket_fields(fp)]

    def add_many(self, fps: np.ndarray, sketches: list[bytes] | None = None) -> None:
        n = len(fps)
        last = int(self.client.hincrby(self.keys[0], "size", n))
        keys = np.arange(last - n + 1, last + 1, dtype=np.uint64)
        entries = np.empty(n, dtype=[("fp", ">u8"), ("key", ">u4")])
        entries["fp"], entries["key"] = fps, keys
        append = self.client.register_script(_APPEND)
        index = self.index
        for t, buckets in enumerate(index.bucket_numbers(fps)):
            order = np.argsort(buckets, kind="stable")
            ordered = buckets[order]
            starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
            ends = np.r_[starts[1:], n]
            width = (index._take(index._tables[t]) + 7) // 8
            data = entries[order].tobytes()
            args: list[bytes] = []
            for start, end in zip(starts.tolist(), ends.tolist()):
                args += [int(ordered[start]).to_bytes(width, "big"), data[start * 12 : end * 12]]
                if len(args) >= 40000:
                    append(keys=[self.table_keys[t]], args=args)
                    args = []
            if args:
                append(keys=[self.table_keys[t]], args=args)
        if sketches is not None:
            _hset_by_key(self.client, self.keys[2], keys, sketches)

    def query_and_add(self, fp: int, url: str, sketch: bytes) -> int:
        args = [int(fp).to_bytes(8, "big"), K, "if_new", url, "legacy", 0, sketch, CONFIRM,
                *self.fields(fp)]  # fmt: skip
        return int(self.script(keys=self.keys, args=args)[1])


def _hset_by_key(client, name: str, keys: np.ndarray, values: list, batch: int = 20000) -> None:
    """``values[i]`` under field ``keys[i]`` of hash ``name`` (format 2's sketches)."""
    pipe = client.pipeline(transaction=False)
    for start in range(0, len(keys), batch):
        pipe.hset(name, mapping=dict(zip(map(str, keys[start : start + batch].tolist()),
                                         values[start : start + batch])))  # fmt: skip
    pipe.execute()


# -- memory ------------------------------------------------------------------------


def memory_per_page(client, size: int) -> dict[str, float]:
    """Bytes a page in Redis, by part, after bulk loads of ``size`` pages."""
    layout = TableLayout.plan(K, EXPECTED)
    fps = random_fingerprints(size, 0)
    out: dict[str, float] = {}

    def delta(load) -> float:
        before = used_memory(client)
        load()
        time.sleep(0.5)  # let the active rehash of a grown hash finish
        return (used_memory(client) - before) / size

    client.flushall()
    index = RedisSimhashIndex(client, "bench:simhash", layout, expected_size=EXPECTED)
    index.open()
    keys: list[np.ndarray] = []
    sketches = random_sketches(size, 1)
    out["log and sketches, this version"] = delta(
        lambda: keys.append(index.add_many(fps, sketches=sketches))
    )
    # the tables, and the 8-byte fingerprint a key that names a match's fingerprint
    out["each process's tables, this version (not in Redis)"] = (
        index.local.memory_usage()["bytes_per_fingerprint"] + 8)
    urls = [URL.format(i) for i in range(size)]
    out['URLs, SIMHASH_REDIS_URLS = "full"'] = delta(lambda: index._add_urls(keys[0], urls, 20000))
    client.delete(index.urls_key)
    out['URLs, SIMHASH_REDIS_URLS = "hash"'] = delta(
        lambda: index._add_url_hashes(int(keys[0][0]), urls)
    )
    urls = []  # freed: the memory figures of a big run
    client.flushall()
    buckets = BucketRedisSimhashIndex(client, "old:simhash", layout, expected_size=EXPECTED)
    buckets.open()
    keys.clear()
    out["tables, previous version (buckets in one hash)"] = delta(
        lambda: keys.append(buckets.add_many(fps))
    )
    out["sketches, previous version (blocks of 255)"] = delta(
        lambda: buckets._add_sketches(int(keys[0][0]), sketches)
    )
    client.flushall()
    legacy = LegacyIndex(client, "old:simhash", layout, EXPECTED)
    legacy.open()
    out["tables, format 2 (a hash per table)"] = delta(lambda: legacy.add_many(fps))
    out["sketches, format 2 (a hash field each)"] = delta(
        lambda: _hset_by_key(client, "old:simhash:sketches", keys[0], sketches)
    )
    sketches = []
    client.flushall()

    def sadd() -> None:
        pipe = client.pipeline(transaction=False)
        for i in range(size):
            pipe.sadd("bench:dupefilter", hashlib.sha1(b"%d" % i).hexdigest())
            if i % 20000 == 19999:
                pipe.execute()
        pipe.execute()

    out["scrapy-redis dupefilter (SADD of a 40-hex SHA1)"] = delta(sadd)
    client.flushall()
    return out


# -- pages a second ------------------------------------------------------------------


def preload(url: str, row: str, size: int, *, flush: bool = True) -> None:
    redis = import_redis()
    client = redis.Redis.from_url(url)
    if flush:
        client.flushall()
    layout = TableLayout.plan(K, EXPECTED)
    fps = random_fingerprints(size, 7)
    if row == "sadd":
        pipe = client.pipeline(transaction=False)
        for i in range(size):
            pipe.sadd("bench:dupefilter", hashlib.sha1(b"preload %d" % i).hexdigest())
        pipe.execute()
    elif row == "legacy":
        legacy = LegacyIndex(client, "old:simhash", layout, EXPECTED)
        legacy.open()
        legacy.add_many(fps, random_sketches(size, 8))
    else:
        index = _index(client, row)
        index.open()
        index.add_many(fps, sketches=random_sketches(size, 8))
    client.close()


def checker(client, row: str, ops: int, seed: int):
    """``check(i)``: the ``i``-th of ``ops + 1`` new pages of ``seed`` checked (and
    stored if new) by ``row``'s index (page ``ops`` connects and loads scripts)."""
    layout = TableLayout.plan(K, EXPECTED)
    fps = random_fingerprints(ops + 1, seed).tolist()
    sketches = random_sketches(ops + 1, seed + 1)
    urls = [URL.format(seed * 1_000_000 + i) for i in range(ops + 1)]
    if row == "sadd":
        def check(i: int) -> None:
            client.sadd("bench:dupefilter", hashlib.sha1(urls[i].encode()).hexdigest())
    elif row == "legacy":
        legacy = LegacyIndex(client, "old:simhash", layout, EXPECTED)

        def check(i: int) -> None:
            legacy.query_and_add(fps[i], urls[i], sketches[i])
    else:
        index = _index(client, row)
        index.open()  # this version: reads the preloaded log into its tables (not timed)

        def check(i: int) -> None:
            index.query_and_add(fps[i], urls[i], sketch=sketches[i])
    return check


def _index(client, row: str) -> RedisSimhashIndex | BucketRedisSimhashIndex:
    """The index of ``row``: this version's ("index") or the previous one's ("buckets")."""
    kind = BucketRedisSimhashIndex if row == "buckets" else RedisSimhashIndex
    prefix = "old:simhash" if row == "buckets" else "bench:simhash"
    return kind(client, prefix, TableLayout.plan(K, EXPECTED), expected_size=EXPECTED)


def _worker(url: str, row: str, ops: int, seed: int, start, out) -> None:
    redis = import_redis()
    client = redis.Redis.from_url(url)
    check = checker(client, row, ops, seed)
    check(ops)  # connect, load the script
    start.wait()
    t0, cpu0 = time.perf_counter(), time.process_time()
    for i in range(ops):
        check(i)
    out.put((time.perf_counter() - t0, time.process_time() - cpu0))
    client.close()


_SCRIPT_CALLS = ("cmdstat_evalsha", "cmdstat_eval", "cmdstat_evalsha_ro", "cmdstat_eval_ro")


def server_cost(client) -> tuple[float, float, float]:
    """(microseconds inside scripts, inside other commands, of server CPU) since the
    last reset (the CPU as an absolute reading: the caller subtracts). Redis counts a
    command a script runs twice, in the script's time and under its own name, so
    the second figure includes the scripts' own commands: an upper bound of the
    time in the client's other commands."""
    stats = client.info("commandstats")
    scripts = sum(s.get("usec", 0) for name, s in stats.items() if name in _SCRIPT_CALLS)
    others = sum(s.get("usec", 0) for name, s in stats.items()
                 if name not in _SCRIPT_CALLS and not name.startswith("cmdstat_config"))  # fmt: skip
    cpu = client.info("cpu")
    return float(scripts), float(others), 1e6 * (cpu["used_cpu_user"] + cpu["used_cpu_sys"])


def rate(url: str, row: str, procs: int, ops: int, seed: int) -> dict[str, float]:
    redis = import_redis()
    client = redis.Redis.from_url(url)
    ctx = multiprocessing.get_context("fork")
    start, out = ctx.Barrier(procs + 1), ctx.Queue()
    workers = [
        ctx.Process(target=_worker, args=(url, row, ops, seed + 100 * i, start, out))
        for i in range(procs)
    ]
    for w in workers:
        w.start()
    client.config_resetstat()
    *_, cpu0 = server_cost(client)
    start.wait()
    results = [out.get(timeout=1200) for _ in workers]
    scripts, others, cpu1 = server_cost(client)
    for w in workers:
        w.join()
    client.close()
    pages = procs * ops
    wall = max(seconds for seconds, _ in results)
    return {
        "rate": pages / wall,
        "scripts": scripts / pages,
        "others": others / pages,
        "server": (cpu1 - cpu0) / pages,
        "client": 1e6 * sum(cpu for _, cpu in results) / pages,
    }


# -- the slowest command -------------------------------------------------------------


def shared_fingerprint(client, pages: int, row: str = "index") -> dict[str, float]:
    """SLOWLOG over ``pages`` distinct pages (sketches that never confirm) sharing one
    fingerprint, checked and stored one after the other."""
    client.flushall()
    index = _index(client, row)
    index.open()
    fp = int(random_fingerprints(1, 3)[0])
    sketches = random_sketches(pages, 4)
    client.config_set("slowlog-max-len", 100_000)
    client.config_set("slowlog-log-slower-than", 0)
    client.slowlog_reset()
    durations: list[int] = []
    t0 = time.perf_counter()
    for i, sketch in enumerate(sketches):
        index.query_and_add(fp, URL.format(i), sketch=sketch)
        if i % 500 == 499 or i == pages - 1:
            durations += [e["duration"] for e in client.slowlog_get(100_000)
                          if not e["command"].upper().startswith(b"SLOWLOG")]
            client.slowlog_reset()
    client.config_set("slowlog-log-slower-than", 10_000)
    stored = len(index)
    client.flushall()
    return {
        "max": max(durations),
        "p99": float(np.percentile(durations, 99)),
        "median": float(np.median(durations)),
        "commands": len(durations),
        "stored": stored,
        "seconds": time.perf_counter() - t0,
    }


def _parser() -> str:
    """What parses replies and packs commands: hiredis (the ``redis`` extra) or Python."""
    try:
        import hiredis
    except ImportError:
        return "Python parser, hiredis not installed"
    return f"hiredis {hiredis.__version__}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="pages for the memory figures")
    parser.add_argument("--rate-size", type=int, default=100_000, help="pages preloaded")
    parser.add_argument("--ops", type=int, default=2000, help="pages per process and repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shared", type=int, default=3000, help="pages sharing a fingerprint")
    parser.add_argument("--k", type=int, default=DEFAULT_MAX_DISTANCE,
                        help=f"the index's k (default {DEFAULT_MAX_DISTANCE}, the default setting)")
    args = parser.parse_args()
    global K
    K = args.k  # the workers are forked: they see it too
    if REDIS_SERVER is None or REDIS_CLI is None:
        sys.exit("redis-server is not installed (make redis-server installs Debian's package)")
    redis = import_redis()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-redis-") as tmp:
        server = RedisServer(Path(tmp))
        server.start()
        try:
            client = redis.Redis.from_url(server.url)
            layout = TableLayout.plan(K, EXPECTED)
            print(f"redis-server {client.info('server')['redis_version']}, redis-py "
                  f"{redis.__version__} ({_parser()}), k={K}, layout {layout.spec} ({len(layout.tables)} "
                  f"tables) planned for {EXPECTED:,} pages; load average at start "
                  f"{os.getloadavg()[0]:.2f}")
            print()
            print(f"Redis memory per page at {args.size:,} pages (INFO used_memory delta)")
            for label, per_page in memory_per_page(client, args.size).items():
                print(f"  {label:<52} {per_page:>8.1f} B")
            print()

            rows = [("sadd", "scrapy-redis dupefilter (SADD of a SHA1)"),
                    ("index", "simhash index, this version (log)"),
                    ("buckets", "previous version (buckets in Redis)"),
                    ("legacy", "format 2 (one script probing)")]  # fmt: skip
            print(f"New pages checked a second, summed over the processes (median of "
                  f"{args.repeats} x {args.ops:,} pages a process, rows interleaved; "
                  f"{args.rate_size:,} pages preloaded)")
            figures: dict[tuple[str, int], list[dict[str, float]]] = {}
            for procs in (1, 4, 8):
                for r in range(args.repeats):
                    for row, _ in rows:
                        preload(server.url, row, args.rate_size)
                        figures.setdefault((row, procs), []).append(
                            rate(server.url, row, procs, args.ops, seed=1000 * procs + 10 * r)
                        )
            print(f"  {'':<42} {'1 process':>10} {'4 processes':>12} {'8 processes':>12}"
                  f" | Redis us/page: {'in scripts':>10} {'other commands*':>15} "
                  f"{'server CPU':>10} | client CPU us/page")
            for row, label in rows:
                med = {p: {key: statistics.median(f[key] for f in figures[(row, p)])
                           for key in figures[(row, p)][0]} for p in (1, 4, 8)}  # fmt: skip
                print(f"  {label:<42} {med[1]['rate']:>10,.0f} {med[4]['rate']:>12,.0f} "
                      f"{med[8]['rate']:>12,.0f} | {'':>14}{med[1]['scripts']:>10.1f} "
                      f"{med[1]['others']:>15.1f} {med[1]['server']:>10.1f} | "
                      f"{med[1]['client']:>10.0f}")
            print("  (Redis and client CPU per page: 1 process; at 4 processes, this version: "
                  + ", ".join(f"{statistics.median(f[key] for f in figures[('index', 4)]):.1f}"
                              for key in ("scripts", "others", "server", "client")) + " us)")
            print("  * Redis counts the commands a script runs twice: in the script's time and "
                  "under their own names, here; an upper bound of the time in the clients' "
                  "commands outside scripts")
            print()
            for row, label in (("index", "this version"), ("buckets", "previous version")):
                slow = shared_fingerprint(client, args.shared, row)
                print(f"{args.shared:,} distinct pages sharing one fingerprint, checked and "
                      f"stored, {label}: {slow['stored']:,} stored; SLOWLOG over "
                      f"{slow['commands']:,} commands: slowest {slow['max'] / 1000:.2f} ms, "
                      f"99th percentile {slow['p99'] / 1000:.3f} ms, median "
                      f"{slow['median'] / 1000:.3f} ms, {slow['seconds']:.1f} s")
            client.close()
        finally:
            server.stop()
    print(f"({time.perf_counter() - started:.0f} s; load average at the end "
          f"{os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
