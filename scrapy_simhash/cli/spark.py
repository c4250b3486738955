"""``scrapy-simhash spark-pairs`` and ``spark-clusters``: an archive's near-duplicates on Spark.

Also runnable with ``spark-submit`` on a cluster, where the session's master and
resources come from spark-submit::

    spark-submit "$(python -c 'import scrapy_simhash.cli.spark as m; print(m.__file__)')" \\
        clusters --warc s3a://bucket/crawl/ out/keep.parquet

Without spark-submit a local session is started (``--master``, default ``local[*]``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

FORMATS = (
    "input: Parquet (a file or a folder of files) with columns url and fingerprint "
    "(bigint holding the unsigned 64 bits, or a string of 16 hex digits or a decimal "
    "number) and optionally sketch (binary, the 64-byte second signature that confirms a "
    "drop; without it nothing is confirmed), or url and html (pages, string or binary, fingerprinted as a crawl "
    "would); with --warc, WARC files or folders of them (their HTML response records)."
    "\n\n"
    "output: spark-pairs writes a Parquet folder of url_a, url_b, distance: each pair of "
    "distinct fingerprints within k once (between the smallest URL holding each), and "
    "every page whose fingerprint another page shares joined to the smallest such URL "
    "(distance 0): the within-k graph without the quadratic blow-up of identical pages."
    "\n\n"
    "spark-clusters writes a Parquet folder of url, fingerprint (16 hex digits), "
    "cluster_id (the page's component of the within-k graph; null: near no other page), "
    "keep and duplicate_of (the keep list: a page is dropped only when it is within k "
    "bits of a kept page, which duplicate_of names). Join it to your pages on url."
)


def add_commands(commands: Any) -> None:
    """Add ``spark-pairs`` and ``spark-clusters`` to the command registry."""
    for name, summary in (
        ("spark-pairs", "near-duplicate pairs of an archive, on Apache Spark"),
        ("spark-clusters", "clusters and a keep list of an archive, on Apache Spark"),
    ):
        parser = commands.add(
            name, lambda args, problems, progress: run(args), summary, formats=FORMATS,
            example=f"{name} --warc crawl-warcs/ out.parquet",
        )
        _arguments(parser)
        parser.set_defaults(spark_command=name.removeprefix("spark-"))


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", nargs="+", help="Parquet input, or WARC files/folders with --warc")
    parser.add_argument("output", help="Parquet folder to write (replaced if it exists)")
    parser.add_argument("--warc", action="store_true", help="the inputs are WARC files or folders")
    parser.add_argument("-k", "--distance", type=int, default=None,
                        help="bits (default: the crawler's k, 6, when the input has sketches "
                             "or pages; 3 for bare fingerprints, which nothing confirms)")
    parser.add_argument("--master", default=None, help="Spark master (default: spark-submit's, "
                        "else local[*])")
    parser.add_argument("--partitions", type=int, default=None,
                        help="shuffle partitions (default: ~200k fingerprints each)")


def session(master: str | None = None) -> Any:
    """The active SparkSession, or a new one (``master``; without it spark-submit's,
    or Spark's default ``local[*]``)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        from scrapy_simhash.spark import _INSTALL_HINT

        raise SystemExit(f"scrapy-simhash: {_INSTALL_HINT}") from exc
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName("scrapy-simhash")
    if master:  # else spark-submit's master, or Spark's own default, local[*]
        builder = builder.master(master)
    return builder.getOrCreate()


def load_fingerprints(spark: Any, paths: Sequence[str], warc: bool) -> Any:
    """``url, fingerprint`` (signed bigint) and ``sketch`` where the input has or
    makes one, from any accepted input."""
    from pyspark.sql import functions as F

    from scrapy_simhash import spark as S

    if warc:
        return S.fingerprint_pages(S.read_warc(spark, paths)).select(
            "url", "fingerprint", "sketch")
    frame = spark.read.parquet(*paths)
    columns = set(frame.columns)
    if {"url", "fingerprint"} <= columns:
        fp = frame.schema["fingerprint"].dataType.simpleString()
        sketch = ["sketch"] if "sketch" in columns else []
        if not sketch:
            print("scrapy-simhash: no sketch column: near-duplicates are not confirmed by a "
                  "second signature (give pages, or fingerprint_pages' output, to confirm "
                  "them as a crawl does)", file=sys.stderr)
        if fp == "bigint":
            return frame.select("url", "fingerprint", *sketch)
        if fp == "string":
            return frame.select("url", S.parse_fingerprint_column(F.col("fingerprint")), *sketch)
        raise SystemExit(f"scrapy-simhash: fingerprint column of type {fp}: expected bigint "
                         "or string (hex or decimal)")
    if {"url", "html"} <= columns:
        return S.fingerprint_pages(frame).select("url", "fingerprint", "sketch")
    raise SystemExit(
        f"scrapy-simhash: {', '.join(paths)}: expected columns url and fingerprint, or url "
        f"and html; found {', '.join(sorted(columns))}"
    )


def run(args: argparse.Namespace) -> int:
    from pyspark.sql import functions as F

    from scrapy_simhash import spark as S

    spark = session(args.master)
    start = time.perf_counter()
    pages = load_fingerprints(spark, args.input, args.warc)
    if args.partitions:
        spark.conf.set("spark.sql.shuffle.partitions", str(args.partitions))
    if args.spark_command == "pairs":
        result = S.page_pairs(pages, args.distance)
    else:
        result = S.clusters(pages, args.distance).withColumn(
            "fingerprint", S.hex_column(F.col("fingerprint"))
        )
    result.write.mode("overwrite").parquet(args.output)
    written = spark.read.parquet(args.output)
    rows = written.count()
    summary = f"{rows:,} rows"
    if args.spark_command == "clusters":
        kept = written.where(F.col("keep")).count()
        summary = f"{rows:,} pages, {kept:,} kept, {rows - kept:,} near-duplicates"
    print(f"scrapy-simhash: wrote {args.output}: {summary} "
          f"in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``spark-submit scrapy_simhash/cli/spark.py {pairs,clusters} ...``"""
    parser = argparse.ArgumentParser(
        prog="scrapy_simhash.cli.spark", description=__doc__, epilog=FORMATS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("spark_command", choices=("pairs", "clusters"))
    _arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
