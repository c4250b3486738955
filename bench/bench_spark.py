"""Spark against the in-process index on the same fingerprints: pairs and clusters.

N fingerprints (half random, half copies of them 1-3 bits away, as in
``bench_cli``) are written to Parquet as ``url, fingerprint``; then, in one run:

* in-process: ``SimhashIndex.add_many`` + ``pairs()`` and ``clusters()`` (what
  ``scrapy-simhash find-all`` / ``clusters`` do), wall time;
* Spark ``local[2]``: ``spark-pairs`` and ``spark-clusters`` end to end (read
  Parquet, join, write Parquet), wall time, the session already started.

Usage: ``python -m bench.bench_spark [--n 1000000] [--k 3]``. On one machine the
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=None)
    args = parser.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    import pandas as pd
    from pyspark.sql import SparkSession

    from scrapy_simhash import spark as S
    from scrapy_simhash.index import SimhashIndex

    n, k = args.n, args.k
    fps = fingerprints(n)
    work = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    try:
        source = work / "fps.parquet"
        pd.DataFrame({
            "url": [f"https://example.com/{i}" for i in range(n)],
            "fingerprint": S.from_unsigned(fps),
        }).to_parquet(source, index=False)
        print(f"# N = {n:,} fingerprints, k = {k}; {platform.processor() or platform.machine()}, "
              f"{os.cpu_count()} cores; wall seconds")

        start = time.perf_counter()
        index = SimhashIndex(k=k, expected_size=n)
        index.add_many(fps, np.arange(n, dtype=np.uint64))
        pairs = index.pairs()
        in_pairs = time.perf_counter() - start
        start = time.perf_counter()
        groups = index.clusters()
        in_clusters = in_pairs + time.perf_counter() - start
        print(f"in-process: pairs {len(pairs):,} in {in_pairs:.2f} s; "
              f"{len(groups):,} clusters in {in_clusters:.2f} s (build included)")

        start = time.perf_counter()
        spark = (
            SparkSession.builder.master("local[2]").appName("bench-spark")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions",
                    str(args.partitions or S.default_partitions(n)))
            .config("spark.driver.memory", "6g")
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
              f"{sp_clusters:.1f} s ({sp_clusters / in_clusters:.0f}x in-process)")
        if got != len(pairs):
            print(f"MISMATCH: spark {got} pairs, in-process {len(pairs)}")
            return 1
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
