"""What the record log's fsync policy costs: appends a second, one at a time.

    python -m bench.bench_store                  # in a temporary directory
    python -m bench.bench_store --dir /some/disk  # on the disk a JOBDIR lives on

Each row appends --n records of a 60-byte URL with ``RecordLog.append`` (one
write a record, as a crawl does) with ``fsync_interval`` None (never: left to
the kernel), 1.0 (the default) and 0 (an fsync every append, on --n-sync
records): appends a second (wall, median of --repeats) and CPU microseconds an
append. The machine is shared: CPU time is what the code costs; an fsync's wall
time is the disk's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from scrapy_simhash.index.store import RecordLog

URL = b"https://www.example.com/section/some-article-title-2026.html?x=1"[:60]


def run(directory: str, n: int, interval: float | None) -> tuple[float, float]:
    path = os.path.join(directory, "seen")
    with RecordLog.open(path, {"format": "bench"}, reset=True,
                        fsync_interval=interval) as log:
        append = log.append
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(n):
            append(i * 0x9E3779B97F4A7C15 % 2**64, i, URL)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    os.unlink(path)
    return wall, cpu


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--n-sync", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        print(f"RecordLog.append of a 60-byte URL in {directory}, medians of {args.repeats}")
        for label, interval, n in (("fsync_interval=None (kernel writeback)", None, args.n),
                                   ("fsync_interval=1.0 (default)", 1.0, args.n),
                                   ("fsync_interval=0 (every append)", 0.0, args.n_sync)):
            runs = [run(directory, n, interval) for _ in range(args.repeats)]
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            print(f"  {label:<42} {n / wall:>12,.0f} appends/s   "
                  f"cpu {cpu / n * 1e6:6.2f} us an append   ({n:,} appends)", flush=True)


if __name__ == "__main__":
    main()
