"""The Redis index's client CPU a new page with redis-py's Python parser and with hiredis.

The ``redis`` extra installs ``hiredis``, which redis-py then uses to parse replies and
pack commands. This measures what that buys, in one run: a private ``redis-server``
(:mod:`evaluation.redis_servers`), ``--size`` pages preloaded at the defaults (k = 6,
28 tables), then, alternating in each repeat, a fresh process checks ``--ops`` new
pages (random fingerprints and sketches) with hiredis hidden from it (redis-py falls
back to its Python parser and packer) and one with hiredis; the figure is the process's
CPU time per page, median over repeats, for this version's index (the log, the tables in
the process) and the previous one (the buckets in Redis). Run:
``python -m bench.bench_redis_client``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROWS = ("index", "buckets")
PARSERS = ("python", "hiredis")


def worker(url: str, row: str, ops: int, seed: int) -> float:
    """CPU microseconds a new page in this process (hiredis hidden by the caller)."""
    from bench.bench_redis import checker
    from scrapy_simhash.backends.redis_index import import_redis

    check = checker(import_redis().Redis.from_url(url), row, ops, seed)
    check(ops)  # connect, load the script
    cpu0 = time.process_time()
    for i in range(ops):
        check(i)
    return 1e6 * (time.process_time() - cpu0) / ops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="pages preloaded")
    parser.add_argument("--ops", type=int, default=2000, help="new pages a process")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--worker", nargs=4, metavar=("URL", "ROW", "PARSER", "SEED"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        url, row, which, seed = args.worker
        if which == "python":
            sys.modules["hiredis"] = None  # type: ignore[assignment]  # redis-py: not installed
        import redis.utils

        assert redis.utils.HIREDIS_AVAILABLE == (which == "hiredis"), "hiredis not installed"
        print(json.dumps(worker(url, row, args.ops, int(seed))))
        return

    from bench.bench_redis import preload
    from evaluation.redis_servers import REDIS_SERVER, RedisServer

    if REDIS_SERVER is None:
        sys.exit("redis-server is not installed (make redis-server installs Debian's package)")
    started = time.perf_counter()
    print(f"load average at start {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="bench-redis-client-") as tmp:
        server = RedisServer(Path(tmp))
        server.start()
        try:
            preload(server.url, "index", args.size)
            preload(server.url, "buckets", args.size, flush=False)
            cpu: dict[tuple[str, str], list[float]] = {}
            for r in range(args.repeats):
                for row in ROWS:
                    for which in PARSERS:
                        out = subprocess.run(
                            [sys.executable, "-m", "bench.bench_redis_client", "--ops",
                             str(args.ops), "--worker", server.url, row, which,
                             str(1000 + 10 * r + PARSERS.index(which))],
                            check=True, capture_output=True, text=True,
                        )  # fmt: skip
                        cpu.setdefault((row, which), []).append(json.loads(out.stdout))
        finally:
            server.stop()
    print(f"client CPU a new page, {args.size:,} pages preloaded, {args.ops:,} new pages a "
          f"process, median of {args.repeats} (alternating)")
    print(f"  {'':<38} {'Python parser':>14} {'hiredis':>10} {'ratio':>7}")
    labels = {"index": "simhash index, this version (log)",
              "buckets": "previous version (buckets in Redis)"}
    for row in ROWS:
        python, hiredis = (statistics.median(cpu[(row, w)]) for w in PARSERS)
        print(f"  {labels[row]:<38} {python:>11.0f} us {hiredis:>7.0f} us {hiredis / python:>7.2f}")
    print(f"({time.perf_counter() - started:.0f} s; load average at the end "
          f"{os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
