"""Spark against the in-process index on the same fingerprints: pairs and clusters.

N fingerprints (half random, half copies of them 1-3 bits away, as in
``bench_cli``) are written to Parquet as ``url, fingerprint``; then, in one run:

* in-process: ``SimhashIndex.add_many`` + ``pairs()`` and ``clusters()`` (what
  ``scrapy-simhash find-all`` / ``clusters`` do), wall time;
* Spark ``local[2]``: ``spark-pairs`` and ``spark-clusters`` end to end (read
  Parquet, join, write Parquet), wall time, the session already started.

With ``--sketches`` every page also gets a sketch in the crawler's layout
(:data:`~scrapy_simhash.fingerprinting.signature.LAYOUT`; random for the
originals, as :mod:`bench.bench_probe` makes distinct pages; a copy keeps its
original's own-text bins but 4 of the 48, so it confirms by its own text as an
edited copy does; a tenth of the copies get a fresh sketch, so they do not),
and both sides take the crawler's decision at its k (7 by default): candidates
within k confirmed by sketches (in-process: ``pairs()`` then ``confirms_many``;
pairs only, no clusters).

Usage: ``python -m bench.bench_spark [--n 1000000] [--k 3] [--sketches] [--driver-memory 6g]``. On one machine the
in-process index is much faster; Spark is for archives whose fingerprints or
pages do not fit one machine, or that already live on a Spark cluster.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def fingerprints(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2**64 - 1, size=n - n // 2, dtype=np.uint64, endpoint=True)
    copies = base[: n // 2].copy()
    for _ in range(3):
        copies ^= np.uint64(1) << rng.integers(0, 64, size=len(copies)).astype(np.uint64)
    return np.concatenate([base, copies])


def sketches(n: int, seed: int = 1) -> np.ndarray:
    """``(n, SKETCH_BINS) uint8`` sketches matching :func:`fingerprints`' pages."""
    from bench.bench_probe import sketches as distinct
    from scrapy_simhash.fingerprinting.signature import OWN_BINS

    rng = np.random.default_rng(seed)
    base = distinct(rng, n - n // 2)
    copies = distinct(rng, n // 2)  # exact keys of their own: no copy is exact
    own = base[: n // 2, :OWN_BINS].copy()
    rows = np.arange(len(own))[:, None]
    own[rows, rng.integers(0, OWN_BINS, size=(len(own), 4))] = rng.integers(
        1, 256, size=(len(own), 4), dtype=np.uint8)
    edited = rng.random(len(copies)) >= 0.1  # the rest keep the fresh sketch
    copies[edited, :OWN_BINS] = own[edited]
    return np.concatenate([base, copies])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--k", type=int, default=None,
                        help="bits (default: 7 with --sketches, as a crawl; 3 without)")
    parser.add_argument("--partitions", type=int, default=None)
    parser.add_argument("--sketches", action="store_true",
                        help="give pages sketches: the crawler's confirmed decision on both sides")
    parser.add_argument("--driver-memory", default="6g",
                        help="the local JVM's heap (spark.driver.memory); 12g for 10M")
    args = parser.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    import pandas as pd
    from pyspark.sql import SparkSession

    from scrapy_simhash import spark as S
    from scrapy_simhash.fingerprinting.signature import DEFAULT_MAX_DISTANCE, confirms_many
    from scrapy_simhash.index import SimhashIndex

    n = args.n
    k = args.k if args.k is not None else (DEFAULT_MAX_DISTANCE if args.sketches else 3)
    fps = fingerprints(n)
    work = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    try:
        source = work / "fps.parquet"
        columns = {
            "url": [f"https://example.com/{i}" for i in range(n)],
            "fingerprint": S.from_unsigned(fps),
        }
        sk = sketches(n) if args.sketches else None
        if sk is not None:
            columns["sketch"] = [row.tobytes() for row in sk]
        pd.DataFrame(columns).to_parquet(source, index=False)
        del columns
        print(f"# N = {n:,} fingerprints{' with sketches (confirmed)' if args.sketches else ''}, "
              f"k = {k}; {platform.processor() or platform.machine()}, "
              f"{os.cpu_count()} cores; wall seconds")

        start = time.perf_counter()
        index = SimhashIndex(k=k, expected_size=n)
        index.add_many(fps, np.arange(n, dtype=np.uint64))
        pairs = index.pairs()
        if sk is not None:
            pairs = pairs[confirms_many(sk[pairs[:, 0]], sk[pairs[:, 1]])]
        in_pairs = time.perf_counter() - start
        if sk is None:
            start = time.perf_counter()
            groups = index.clusters()
            in_clusters = in_pairs + time.perf_counter() - start
            print(f"in-process: pairs {len(pairs):,} in {in_pairs:.2f} s; "
                  f"{len(groups):,} clusters in {in_clusters:.2f} s (build included)")
        else:
            in_clusters = float("nan")
            print(f"in-process: confirmed pairs {len(pairs):,} in {in_pairs:.2f} s (build included)")

        start = time.perf_counter()
        spark = (
            SparkSession.builder.master("local[2]").appName("bench-spark")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions",
                    str(args.partitions or S.default_partitions(n)))
            .config("spark.driver.memory", args.driver_memory)
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        print(f"spark session start: {time.perf_counter() - start:.1f} s")
        frame = spark.read.parquet(str(source))
        start = time.perf_counter()
        S.near_duplicate_pairs(frame, k).write.mode("overwrite").parquet(str(work / "pairs"))
        sp_pairs = time.perf_counter() - start
        got = spark.read.parquet(str(work / "pairs")).count()
        start = time.perf_counter()
        S.clusters(frame, k).write.mode("overwrite").parquet(str(work / "keep"))
        sp_clusters = time.perf_counter() - start
        kept = spark.read.parquet(str(work / "keep")).where("keep").count()
        print(f"spark local[2]: pairs {got:,} in {sp_pairs:.1f} s "
              f"({sp_pairs / in_pairs:.0f}x in-process); keep list ({kept:,} kept) in "
              f"{sp_clusters:.1f} s" + ("" if in_clusters != in_clusters else
                                         f" ({sp_clusters / in_clusters:.0f}x in-process)"))
        if got != len(pairs):
            print(f"MISMATCH: spark {got} pairs, in-process {len(pairs)}")
            return 1
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
