"""scrapy_simhash.spark against a real local Spark session (``local[2]``).

Exact against the in-process index (itself checked against brute force) and
against a numpy brute force; fingerprints equal to a crawl's. Skipped with a
reason when pyspark or Java is missing (``make test`` installs both).
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scrapy_simhash.fingerprinting import Signature, fingerprint_details, is_duplicate
from scrapy_simhash.fingerprinting.signature import SKETCH_BINS
from scrapy_simhash.index import SimhashIndex
from tests.fixtures_http import article_html

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (the 'spark' extra)")
if shutil.which("java") is None:
    pytest.skip("no Java runtime (make test installs openjdk-17-jre-headless)",
                allow_module_level=True)

from scrapy_simhash import spark as S  # noqa: E402

pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("scrapy-simhash-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def near_copies(n: int, k: int, seed: int) -> np.ndarray:
    """n fingerprints: random ones, copies within 1..k bits, and identical runs."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2**64 - 1, size=n // 2, dtype=np.uint64, endpoint=True)
    flips = np.zeros(n // 2, dtype=np.uint64)
    for _ in range(k):
        flips |= np.uint64(1) << rng.integers(0, 64, size=n // 2).astype(np.uint64)
    fps = np.concatenate([base, base ^ flips])
    fps[: n // 20] = fps[n // 20]  # one group of identical fingerprints
    return fps


def frame(spark, fps: np.ndarray):
    import pandas as pd

    urls = [f"https://example.com/{i:06d}" for i in range(len(fps))]
    return spark.createDataFrame(pd.DataFrame({"url": urls, "fingerprint": S.from_unsigned(fps)}))


def brute_pairs(fps: np.ndarray, k: int) -> set[tuple[int, int]]:
    unique = np.unique(fps)
    d = np.bitwise_count(unique[:, None] ^ unique[None, :])
    i, j = np.nonzero(np.triu(d <= k, 1))
    return {(int(unique[a]), int(unique[b])) for a, b in zip(i, j)}


def as_pairs(rows) -> set[tuple[int, int]]:
    a, b = S.to_unsigned(rows["a"].to_numpy()), S.to_unsigned(rows["b"].to_numpy())
    return {(min(x, y), max(x, y)) for x, y in zip(a.tolist(), b.tolist())}


@pytest.mark.parametrize(("k", "layout"), [(0, None), (3, None), (3, "16,16,16,16"), (4, None),
                                           (6, None)])
def test_pairs_are_exact_against_brute_force(spark, k, layout):
    fps = near_copies(1500, k, seed=k)
    got = S.near_duplicate_pairs(frame(spark, fps), k, layout=layout).toPandas()
    assert len(got) == len(as_pairs(got))  # each pair once
    assert (got["distance"] <= k).all()
    assert as_pairs(got) == brute_pairs(fps, k)


def test_pairs_match_the_in_process_index_at_scale(spark):
    fps = near_copies(30_000, 3, seed=7)
    got = as_pairs(S.near_duplicate_pairs(frame(spark, fps), 3).toPandas())
    unique = np.unique(fps)
    index = SimhashIndex(k=3)
    index.add_many(unique, np.arange(len(unique), dtype=np.uint64))
    want = {(int(unique[a]), int(unique[b])) for a, b in index.pairs()}
    assert got == want and len(want) > 10_000


def test_clusters_components_and_keep_list(spark):
    fps = near_copies(4000, 3, seed=3)
    # a chain a ~ b ~ c with a, c more than k apart: both ends must be kept
    chain = np.array([0, 0b111, 0b111111], dtype=np.uint64) + np.uint64(12345 << 20)
    fps = np.concatenate([fps, chain])
    result = S.clusters(frame(spark, fps), 3).toPandas()
    assert len(result) == len(fps)
    result["u"] = S.to_unsigned(result["fingerprint"].to_numpy(dtype=np.int64))
    # components equal the in-process index's clusters of distinct fingerprints
    unique = np.unique(fps)
    index = SimhashIndex(k=3)
    index.add_many(unique, np.arange(len(unique), dtype=np.uint64))
    want = {frozenset(unique[c].tolist()) for c in index.clusters()}
    counts = np.unique(fps, return_counts=True)
    want |= {frozenset([int(f)]) for f, c in zip(*counts) if c > 1
             and not any(int(f) in w for w in want)}
    grouped = result[result["cluster_id"].notna()].groupby("cluster_id")["u"]
    assert {frozenset(int(x) for x in g) for _, g in grouped} == want
    # the keep list: every dropped page within k of a kept page of its cluster,
    # kept pages of a cluster pairwise more than k apart
    by_url = dict(zip(result["url"], result["u"]))
    for _, row in result[~result["keep"]].iterrows():
        assert row["duplicate_of"] in by_url
        assert (int(row["u"]) ^ int(by_url[row["duplicate_of"]])).bit_count() <= 3
    for _, group in result[result["keep"] & result["cluster_id"].notna()].groupby("cluster_id"):
        kept = group["u"].to_numpy(dtype=np.uint64)
        distances = np.bitwise_count(kept[:, None] ^ kept[None, :])
        assert (distances[~np.eye(len(kept), dtype=bool)] > 3).all()
    ends = result[result["u"].isin(chain[[0, 2]])]
    assert ends["keep"].all()


def test_pairs_are_confirmed_by_sketches_as_in_a_crawl(spark):
    """With sketches, a pair is one the crawler's is_duplicate accepts: same
    fingerprint and other sketches is two pages; brute force over every pair."""
    import pandas as pd

    rng = np.random.default_rng(11)
    fps = near_copies(800, 6, seed=11)
    base = rng.integers(1, 256, size=(len(fps) // 2, SKETCH_BINS), dtype=np.uint8)
    copies = base.copy()
    agree = rng.random(len(base)) < 0.5  # half the copies keep the sketch (a copy)
    copies[~agree] = rng.integers(1, 256, size=(int((~agree).sum()), SKETCH_BINS),
                                  dtype=np.uint8)
    sketches = np.concatenate([base, copies])
    sketches[: len(fps) // 40] = rng.integers(1, 256, size=(len(fps) // 40, SKETCH_BINS),
                                             dtype=np.uint8)  # one fingerprint, many pages
    rows = pd.DataFrame({"url": [f"u{i}" for i in range(len(fps))],
                         "fingerprint": S.from_unsigned(fps),
                         "sketch": [bytes(x) for x in sketches]})
    got = S.near_duplicate_pairs(spark.createDataFrame(rows), 6).toPandas()
    nodes = {(int(f), bytes(x)) for f, x in zip(fps.tolist(), sketches)}
    nodes = sorted(nodes)
    want = set()
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            if is_duplicate(Signature(*a), Signature(*b), k=6):
                want.add((min(a[0], b[0]), max(a[0], b[0])))
    assert len(want) > 100
    assert as_pairs(got) == want and len(got) == len(want)
    keep = S.clusters(spark.createDataFrame(rows), 6).toPandas()
    by_url = {u: (int(f), bytes(x)) for u, f, x in zip(rows["url"], fps.tolist(), sketches)}
    assert len(keep) == len(rows)
    for _, row in keep[~keep["keep"]].iterrows():
        assert is_duplicate(Signature(*by_url[row["url"]]),
                            Signature(*by_url[row["duplicate_of"]]), k=6)


def test_fingerprints_equal_the_crawlers(spark):
    import pandas as pd

    from scrapy_simhash.fingerprinting.signature import analyse
    from scrapy_simhash.fingerprinting.template import SiteTemplate

    pages = [article_html(i, chrome="Home News About" * (i % 3)) for i in range(60)] + ["<p>too short</p>", ""]
    rows = pd.DataFrame({"url": [f"u{i}" for i in range(len(pages))],
                         "html": [p.encode("utf-8") for p in pages]})
    from pyspark.sql import functions as F

    fps = S.fingerprint_pages(spark.createDataFrame(rows))
    # through hex strings: toPandas turns a nullable bigint column into floats
    got = fps.select("url", S.hex_column(F.col("fingerprint")).alias("hex"), "sketch",
                     "feature_count").toPandas().set_index("url")
    assert got["hex"].notna().sum() >= 55
    # As a crawl signs them: one host (these URLs name none), read in URL order,
    # each page against the template learned from the pages before it.
    template = SiteTemplate()
    signatures = {}
    for url, page in sorted(zip(rows["url"], pages)):
        found = analyse(page.encode("utf-8"), template=template)
        template.learn(found.evidence.block_hashes, found.details.fingerprint)
        signatures[url] = found.signature
    assert template.known
    for url, page in zip(rows["url"], pages):
        want = fingerprint_details(page)
        value = got.loc[url, "hex"]
        value = None if pd.isna(value) else value
        assert value == (None if want.fingerprint is None else f"{want.fingerprint:016x}")
        assert got.loc[url, "feature_count"] == want.feature_count
        signature = signatures[url]
        assert (signature is None) == (want.fingerprint is None)
        sketch = got.loc[url, "sketch"]
        assert (None if signature is None else signature.sketch) == (
            None if sketch is None or (not isinstance(sketch, bytes) and pd.isna(sketch))
            else bytes(sketch))


def test_fingerprint_strings_round_trip(spark):
    import pandas as pd

    fps = np.array([0, 1, 2**63 - 1, 2**63, 2**64 - 1, 0xF20FD1B882E00196], dtype=np.uint64)
    texts = [f"{int(f):016x}" for f in fps] + [str(int(f)) for f in fps] + ["0x1f", "nope"]
    df = spark.createDataFrame(pd.DataFrame({"s": texts}))
    from pyspark.sql import functions as F

    out = [row.fp for row in df.select(S.parse_fingerprint_column(F.col("s")).alias("fp"))
           .collect()]
    assert S.to_unsigned(out[:12]).tolist() == fps.tolist() * 2
    assert out[12:] == [0x1F, None]
    hexes = df.select(S.hex_column(S.parse_fingerprint_column(F.col("s")))).toPandas().iloc[:6, 0]
    assert hexes.tolist() == texts[:6]


def write_warc(path: Path, pages: dict[str, str]) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with path.open("wb") as stream:
        writer = WARCWriter(stream, gzip=True)
        for url, html in pages.items():
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")],
                                       protocol="HTTP/1.1")
            record = writer.create_warc_record(url, "response", payload=io.BytesIO(
                html.encode("utf-8")), http_headers=headers)
            writer.write_record(record)


def test_warc_folder_to_keep_list_in_one_command(tmp_path):
    pytest.importorskip("warcio")
    warcs = tmp_path / "warcs"
    warcs.mkdir()
    # the mirror's copies: other links, the same visible words (each host's first
    # pages are signed before its template is known: only exact copies are dropped)
    nav = ("Home", "Archive")
    pages = {f"https://site.test/a/{i}": article_html(i, links=("/", "/archive"), labels=nav)
             for i in range(12)}
    copies = {f"https://mirror.test/a/{i}": article_html(
        i, links=("https://mirror.test/", "https://mirror.test/old/"), labels=nav)
        for i in range(12)}
    write_warc(warcs / "one.warc.gz", pages)
    write_warc(warcs / "two.warc.gz", copies)
    out = tmp_path / "keep.parquet"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy_simhash", "spark-clusters", "--warc", str(warcs),
         str(out), "--master", "local[2]"],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    import pandas as pd

    keep = pd.read_parquet(out)
    assert set(keep.columns) >= {"url", "fingerprint", "cluster_id", "keep", "duplicate_of"}
    assert len(keep) == 24
    kept = set(keep.loc[keep["keep"], "url"])
    # one of each original/copy pair is kept, every distinct article survives
    for i in range(12):
        assert (f"https://site.test/a/{i}" in kept) != (f"https://mirror.test/a/{i}" in kept)
    assert "24 pages, 12 kept, 12 near-duplicates" in proc.stderr
