"""Near-duplicates of a crawl archive on Apache Spark: the paper's batch mode.

Manku et al. (WWW 2007, §3.3) find near-duplicates of a whole archive in batch:
fingerprints in a distributed file, each mapper builds tables for its chunk,
reducers merge. Here Spark does that with the same pieces the crawler uses:

* :func:`fingerprint_pages`: a DataFrame of pages (``url``, ``html``) to
  ``url, fingerprint, sketch, feature_count`` through ``mapInPandas``, calling
  the very :func:`~scrapy_simhash.signature` of a crawl (same values).
* :func:`near_duplicate_pairs`: every pair of distinct signatures within k
  bits whose sketches confirm it (the crawler's
  :func:`~scrapy_simhash.is_duplicate`), exact. Identical signatures are
  collapsed first (boilerplate-identical pages would make one huge bucket);
  each distinct one is keyed once per
  table of a :class:`~scrapy_simhash.index.TableLayout` by the fingerprint bits
  of the table's leading ``p`` permuted positions, a self-join on (table, key)
  finds the candidates, ``bit_count(a ^ b) <= k`` keeps the true ones, and a
  pair is kept only in the first table whose key bits it shares, so each pair
  comes out once without a global ``distinct``.
* :func:`clusters`: connected components of those pairs by large-star /
  small-star (Kiveris et al., "Connected Components in MapReduce and Beyond",
  SoCC 2014), then a keep list: inside each component pages are taken in URL
  order and a page is kept unless it is within k bits of a page already kept,
  so every dropped page has a kept near-duplicate, as in a crawl (a component's
  chain of near-duplicates can span distinct pages: keeping one page per
  component would lose them).

Fingerprints are unsigned 64-bit; Spark has no unsigned type, so they travel as
``bigint`` holding the same 64 bits (two's complement), which ``bit_count``,
``^`` and equality treat exactly; :func:`to_unsigned` and :func:`from_unsigned`
convert. Requires the ``spark`` extra (``pip install '.[spark]'`` in a checkout) and a Java runtime.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from scrapy_simhash.extras import needs
from scrapy_simhash.index import TableLayout

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "clusters",
    "fingerprint_pages",
    "from_unsigned",
    "near_duplicate_pairs",
    "read_warc",
    "spark_layout",
    "to_unsigned",
]

#: Largest number of tables the Spark join uses by default: each table adds one
#: row per distinct fingerprint to the join's input (k = 7, the crawler's
#: default with sketches, needs two-level layouts of a few dozen tables).
MAX_SPARK_TABLES = 64
#: Iterations of large-star/small-star after which the components are refused
#: as not converging (each pair of steps at least halves what is left in practice).
MAX_STAR_ROUNDS = 64

_INSTALL_HINT = needs("scrapy_simhash.spark", "pyspark", "spark") + (
    "; it needs a Java runtime too (e.g. Debian's openjdk-17-jre-headless)")


def _functions() -> Any:
    try:
        from pyspark.sql import functions
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(_INSTALL_HINT) from exc
    return functions


def to_unsigned(values: Any) -> np.ndarray:
    """Spark ``bigint`` fingerprints (signed) as ``uint64``, bit for bit."""
    return np.asarray(values, dtype=np.int64).view(np.uint64)


def from_unsigned(values: Any) -> np.ndarray:
    """``uint64`` fingerprints as the signed 64-bit values Spark stores."""
    return np.asarray(values, dtype=np.uint64).view(np.int64)


# -- pages -> fingerprints ----------------------------------------------------


def _signature_batches(
    batches: Iterator[pd.DataFrame], url_col: str, html_col: str, min_features: int
) -> Iterator[pd.DataFrame]:
    from urllib.parse import urlsplit

    import pandas as pd

    from scrapy_simhash.fingerprinting.signature import analyse
    from scrapy_simhash.fingerprinting.template import SiteTemplates

    # A partition holds whole hosts in URL order (fingerprint_pages): each
    # host's template is learned from its pages before, as a crawl learns it.
    templates = SiteTemplates()
    for batch in batches:
        fps = np.zeros(len(batch), dtype=np.uint64)
        counts = np.zeros(len(batch), dtype=np.int32)
        has = np.zeros(len(batch), dtype=bool)
        sketches: list[bytes | None] = [None] * len(batch)
        encodings = batch["encoding"] if "encoding" in batch else None
        for i, html in enumerate(batch[html_col]):
            encoding = None if encodings is None else encodings.iat[i]
            url = batch[url_col].iat[i]
            template = templates[urlsplit(url).netloc if isinstance(url, str) else ""]
            found = analyse(
                html if html is not None else b"",
                template=template,
                min_features=min_features,
                encoding=encoding if isinstance(encoding, str) and encoding else None,
            )
            signature, details = found.signature, found.details
            # as a crawl learns: a page with a fingerprint learned before is not
            template.learn(found.evidence.block_hashes, details.fingerprint)
            counts[i] = details.feature_count
            if signature is not None:
                fps[i] = signature.fingerprint
                sketches[i] = signature.sketch
                has[i] = True
        yield pd.DataFrame(
            {
                "url": batch[url_col].to_numpy(),
                "fingerprint": pd.Series(from_unsigned(fps), dtype="Int64").mask(~has),
                "sketch": sketches,
                "feature_count": counts,
            }
        )


def fingerprint_pages(
    pages: DataFrame,
    *,
    url_col: str = "url",
    html_col: str = "html",
    min_features: int | None = None,
) -> DataFrame:
    """``url, fingerprint, sketch, feature_count`` for a DataFrame of pages: the
    :func:`~scrapy_simhash.signature` a crawl stores for each.

    ``html`` may be a string or binary column (bytes are decoded as a crawl
    decodes them; an optional ``encoding`` column names a page's HTTP charset).
    ``fingerprint`` and ``sketch`` are null for a page with too few features,
    exactly where the crawler would not fingerprint it. Pages are grouped by
    host and read in URL order, each against its host's template learned from
    the pages before it (:mod:`scrapy_simhash.fingerprinting.template`), as a
    crawl reads them.
    """
    from pyspark.sql import functions as sf

    from scrapy_simhash.fingerprinting import DEFAULT_MIN_FEATURES

    minimum = DEFAULT_MIN_FEATURES if min_features is None else int(min_features)
    columns = [url_col, html_col] + (["encoding"] if "encoding" in pages.columns else [])
    schema = "url string, fingerprint bigint, sketch binary, feature_count int"
    host = sf.regexp_extract(sf.col(url_col), r"^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)", 1)
    pages = pages.withColumn("_host", host)
    pages = pages.repartition("_host").sortWithinPartitions("_host", url_col)
    return pages.select(*columns).mapInPandas(
        lambda batches: _signature_batches(batches, url_col, html_col, minimum), schema
    )


def _warc_records(paths: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    import pandas as pd

    from scrapy_simhash.cli.errors import Problems
    from scrapy_simhash.cli.pages import warc_pages

    for batch in paths:
        rows: dict[str, list] = {"url": [], "html": [], "encoding": []}
        for path in batch["path"]:
            for page in warc_pages(Path(path), Problems()):
                rows["url"].append(page.source)
                html = page.html
                rows["html"].append(html.encode("utf-8") if isinstance(html, str) else html)
                rows["encoding"].append(page.encoding)
        yield pd.DataFrame(rows)


def read_warc(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """``url, html, encoding`` of every HTML response record in WARC files
    (one task per file; ``paths`` local or on a file system every executor sees)."""
    files: list[str] = []
    for path in paths:
        p = Path(path)
        if p.is_dir():
            files += sorted(
                str(f) for f in p.rglob("*") if f.name.lower().endswith((".warc", ".warc.gz"))
            )
        else:
            files.append(str(p))
    frame = spark.createDataFrame([(f,) for f in files], "path string")
    frame = frame.repartition(max(1, len(files)))
    return frame.mapInPandas(_warc_records, "url string, html binary, encoding string")


# -- fingerprints -> pairs --------------------------------------------------------


def spark_layout(k: int, expected_size: int = 1 << 20) -> TableLayout:
    """The layout the join uses: the planner's choice among layouts of at most
    :data:`MAX_SPARK_TABLES` tables (each table is one more join input row per
    fingerprint, so fewer tables beat narrower buckets here)."""
    return TableLayout.plan(k, expected_size, max_tables=MAX_SPARK_TABLES)


def table_masks(layout: TableLayout) -> list[int]:
    """Per table, the fingerprint bits that land in its leading ``p`` permuted
    positions: two fingerprints share a table's bucket iff they agree on them."""
    masks = []
    for table in layout.tables:
        lead = np.array([((1 << table.p) - 1) << (64 - table.p)], dtype=np.uint64)
        masks.append(int(table.unpermute_many(lead)[0]))
    return masks


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def default_distance(pages: DataFrame) -> int:
    """k when none is given: the crawler's (candidates confirmed by sketches), or
    3 for bare fingerprints, which nothing confirms."""
    from scrapy_simhash.fingerprinting import DEFAULT_MAX_DISTANCE

    return DEFAULT_MAX_DISTANCE if "sketch" in pages.columns else 3


def _nodes(pages: DataFrame) -> DataFrame:
    """``node, fp[, sketch]``: one node per distinct signature (fingerprint and
    sketch; the fingerprint alone without a sketch column). Pages with the same
    fingerprint but different sketches are different pages, different nodes."""
    F = _functions()
    pages = pages.where(F.col("fingerprint").isNotNull())
    if "sketch" not in pages.columns:
        return pages.select(F.col("fingerprint").alias("fp")).distinct().withColumn(
            "node", F.col("fp"))
    distinct = pages.select(F.col("fingerprint").alias("fp"), "sketch").distinct()
    # ids fixed once: monotonically_increasing_id would change if recomputed
    return distinct.withColumn("node", F.monotonically_increasing_id()).localCheckpoint()


def _confirmed_column(a: Any, b: Any) -> Any:
    """A boolean column: sketches ``a`` and ``b`` confirm the candidate
    (:func:`~scrapy_simhash.fingerprinting.signature.confirms_many`, the crawler's rule)."""
    F = _functions()

    import pandas as pd

    def confirmed(x, y):
        from scrapy_simhash.fingerprinting.signature import SKETCH_BINS, confirms_many

        left = np.frombuffer(b"".join(x), dtype=np.uint8).reshape(-1, SKETCH_BINS)
        right = np.frombuffer(b"".join(y), dtype=np.uint8).reshape(-1, SKETCH_BINS)
        return pd.Series(confirms_many(left, right))

    # real classes, not this module's postponed (string) annotations, for Spark
    confirmed.__annotations__ = {"x": pd.Series, "y": pd.Series, "return": pd.Series}
    confirmed = F.pandas_udf(confirmed, "boolean")
    return confirmed(a, b)


def _node_pairs(nodes: DataFrame, k: int, layout: TableLayout | str | None) -> DataFrame:
    """``u, v, distance``: every pair of nodes whose fingerprints are within k
    bits (and whose sketches confirm it, when there are sketches), once."""
    F = _functions()
    if layout is None or TableLayout.is_auto(layout):
        layout = spark_layout(k, max(1, nodes.count()))
    else:
        layout = TableLayout.resolve(layout, k, 1)
    masks = [_signed(m) for m in table_masks(layout)]
    extra = ["sketch"] if "sketch" in nodes.columns else []
    keyed = nodes.select(
        "node", "fp", *extra,
        F.posexplode(F.array(*[F.col("fp").bitwiseAND(F.lit(m)) for m in masks])).alias(
            "t", "key"
        ),
    )
    a, b = keyed.alias("a"), keyed.alias("b")
    joined = a.join(
        b, (F.col("a.t") == F.col("b.t")) & (F.col("a.key") == F.col("b.key"))
    ).where(F.col("a.node") < F.col("b.node"))
    x = F.col("a.fp").bitwiseXOR(F.col("b.fp"))
    first = F.array_position(F.array(*[x.bitwiseAND(F.lit(m)) == 0 for m in masks]), True)
    pairs = joined.where(
        (F.bit_count(x) <= k) & (F.col("a.t") + 1 == first)
    ).select(
        F.col("a.node").alias("u"),
        F.col("b.node").alias("v"),
        F.bit_count(x).cast("int").alias("distance"),
        *[F.col(f"{side}.sketch").alias(f"{side}_sketch") for side in "ab" if extra],
    )
    if extra:
        pairs = pairs.where(_confirmed_column(F.col("a_sketch"), F.col("b_sketch"))).drop(
            "a_sketch", "b_sketch")
    return pairs


def near_duplicate_pairs(
    fingerprints: DataFrame,
    k: int | None = None,
    *,
    layout: TableLayout | str | None = None,
) -> DataFrame:
    """Every pair of *distinct* signatures within ``k`` bits, once: ``a, b,
    distance`` (fingerprints as signed 64-bit values, ``a <= b``), confirmed by
    the sketches when the DataFrame has a ``sketch`` column, as in a crawl.

    Pages with the same signature are one node here (see :func:`page_pairs`);
    nulls are ignored. Exact: a pair within k bits differs in at most k blocks,
    so it shares every key bit of at least one table.
    """
    F = _functions()
    k = default_distance(fingerprints) if k is None else k
    nodes = _nodes(fingerprints)
    pairs = _node_pairs(nodes, k, layout)
    ends = nodes.select("node", "fp")
    return (
        pairs.join(ends.withColumnRenamed("node", "u").withColumnRenamed("fp", "fa"), "u")
        .join(ends.withColumnRenamed("node", "v").withColumnRenamed("fp", "fb"), "v")
        .select(F.least("fa", "fb").alias("a"), F.greatest("fa", "fb").alias("b"), "distance")
    )


def _page_nodes(pages: DataFrame, nodes: DataFrame) -> DataFrame:
    """``url, fingerprint[, sketch], node`` for the fingerprinted pages."""
    F = _functions()
    on = ["fingerprint"] + (["sketch"] if "sketch" in nodes.columns else [])
    return pages.where(F.col("fingerprint").isNotNull()).join(
        nodes.withColumnRenamed("fp", "fingerprint"), on)


def page_pairs(pages: DataFrame, k: int | None = None, *,
               layout: TableLayout | str | None = None) -> DataFrame:
    """``url_a, url_b, distance`` for pages with ``url`` and ``fingerprint`` (and
    ``sketch``): each pair of distinct signatures within k (confirmed) once,
    between the smallest URL holding each, plus every page whose signature
    another page shares joined to the smallest such URL (distance 0). Its
    connected components are those of all page pairs, without the quadratic
    blow-up of boilerplate-identical pages."""
    F = _functions()
    k = default_distance(pages) if k is None else k
    nodes = _nodes(pages)
    members = _page_nodes(pages, nodes)
    rep = members.groupBy("node").agg(F.min("url").alias("rep"))
    pairs = _node_pairs(nodes, k, layout)
    between = (
        pairs.join(rep.withColumnRenamed("node", "u").withColumnRenamed("rep", "url_a"), "u")
        .join(rep.withColumnRenamed("node", "v").withColumnRenamed("rep", "url_b"), "v")
        .select("url_a", "url_b", "distance")
    )
    star = (
        members.join(rep, "node")
        .where(F.col("url") != F.col("rep"))
        .select(F.col("rep").alias("url_a"), F.col("url").alias("url_b"),
                F.lit(0).alias("distance"))
    )
    return between.unionByName(star)


def hex_column(column: Any) -> Any:
    """A signed-bigint fingerprint column as 16 lowercase hex digits (the
    unsigned value, as ``scrapy-simhash fingerprint`` prints it)."""
    F = _functions()
    return F.lower(F.lpad(F.hex(column), 16, "0"))


def parse_fingerprint_column(column: Any) -> Any:
    """A string fingerprint column (16 hex digits, ``0x`` hex, or unsigned
    decimal) as the signed bigint Spark stores; null where it is neither."""
    F = _functions()
    text = F.lower(F.trim(column))
    hex_digits = F.regexp_replace(text, "^0x", "")
    is_hex = text.rlike("^0x[0-9a-f]{1,16}$") | text.rlike("^[0-9a-f]{16}$")
    decimal = F.when(is_hex, F.conv(hex_digits, 16, 10)).when(
        text.rlike("^[0-9]{1,20}$"), text
    ).cast("decimal(20,0)")
    half = F.lit(str(1 << 63)).cast("decimal(21,0)")
    full = F.lit(str(1 << 64)).cast("decimal(21,0)")
    in_range = decimal < full
    return F.when(in_range & (decimal >= half), decimal - full).when(in_range, decimal).cast(
        "bigint").alias("fingerprint")


# -- pairs -> components -> keep list ------------------------------------------------


def _both_ways(edges: DataFrame) -> DataFrame:
    F = _functions()
    return edges.select(F.col("u"), F.col("v")).union(edges.select(F.col("v"), F.col("u")))


def _summary(edges: DataFrame) -> tuple:
    """Count and order-free checksums of an edge set, in one job: equal for the
    same set (what a round of stars leaves unchanged at convergence)."""
    F = _functions()
    row = edges.agg(
        F.count(F.lit(1)),
        F.sum(F.xxhash64("u", "v").cast("decimal(38,0)")),
        F.sum(F.hash("u", "v").cast("decimal(38,0)")),
    ).first()
    return tuple(row)


def _oriented(edges: DataFrame) -> DataFrame:
    """Each undirected edge once, from its larger node to its smaller one."""
    F = _functions()
    return edges.select(
        F.greatest("u", "v").alias("u"), F.least("u", "v").alias("v")
    ).distinct()


def _large_star(edges: DataFrame) -> DataFrame:
    """Connect every larger neighbour of a node to the node's smallest neighbour."""
    F = _functions()
    both = _both_ways(edges)
    low = both.groupBy("u").agg(F.least(F.min("v"), F.col("u")).alias("m"))
    return (
        both.join(low, "u")
        .where(F.col("v") > F.col("u"))
        .select(F.col("v").alias("u"), F.col("m").alias("v"))
        .where(F.col("u") != F.col("v"))
        .distinct()
    )


def _small_star(edges: DataFrame) -> DataFrame:
    """Connect a node and its smaller neighbours to the smallest of them."""
    F = _functions()
    down = _both_ways(edges).where(F.col("v") < F.col("u"))
    low = down.groupBy("u").agg(F.min("v").alias("m"))
    spokes = down.join(low, "u").select(F.col("v").alias("u"), F.col("m").alias("v"))
    centre = low.select(F.col("u"), F.col("m").alias("v"))
    return spokes.union(centre).where(F.col("u") != F.col("v")).distinct()


def components(pairs: DataFrame) -> DataFrame:
    """``node, component`` for every node of an undirected edge list ``u, v``:
    the component is its smallest node (large-star / small-star until stable)."""
    F = _functions()
    edges = _oriented(pairs.select("u", "v").where(F.col("u") != F.col("v")))
    edges = edges.localCheckpoint()
    summary = _summary(edges)
    for _ in range(MAX_STAR_ROUNDS):
        stepped = _oriented(_small_star(_large_star(edges))).localCheckpoint()
        # stable: the same edge set (every edge points at its component's minimum)
        stepped_summary = _summary(stepped)
        edges = stepped
        if stepped_summary == summary:
            break
        summary = stepped_summary
    else:  # pragma: no cover - not seen in practice
        raise RuntimeError(f"connected components did not converge in {MAX_STAR_ROUNDS} rounds")
    both = _both_ways(edges)
    return both.groupBy(F.col("u").alias("node")).agg(
        F.least(F.min("v"), F.col("node")).alias("component")
    )


def _greedy_keep(batches: Iterator[pd.DataFrame], k: int) -> Iterator[pd.DataFrame]:
    """Per component, pages in URL order: a page is kept unless it is a
    near-duplicate (:func:`~scrapy_simhash.is_duplicate`, or within k bits
    without sketches) of a page already kept in its component, the crawler's
    rule, so every dropped page has a kept near-duplicate. Rows arrive sorted by
    (cluster_id, url); a component may span Arrow batches, so the kept pages
    carry over."""
    from scrapy_simhash.fingerprinting.signature import confirms

    current = None
    kept: list[tuple[int, bytes | None, str]] = []
    for batch in batches:
        n = len(batch)
        keep = np.zeros(n, dtype=bool)
        duplicate_of: list[str | None] = [None] * n
        fps = to_unsigned(batch["fingerprint"].to_numpy(dtype=np.int64)).tolist()
        sketches = batch["sketch"].tolist() if "sketch" in batch else [None] * n
        rows = zip(batch["cluster_id"], batch["url"], fps, sketches)
        for i, (cluster, url, fp, sketch) in enumerate(rows):
            if cluster != current:
                current, kept = cluster, []
            for kept_fp, kept_sketch, kept_url in kept:
                if (kept_fp ^ fp).bit_count() <= k and (
                        sketch is None or confirms(kept_sketch, sketch)):
                    duplicate_of[i] = kept_url
                    break
            else:
                keep[i] = True
                kept.append((fp, sketch, url))
        yield batch.drop(columns=["sketch"], errors="ignore").assign(
            keep=keep, duplicate_of=duplicate_of)


def clusters(pages: DataFrame, k: int | None = None, *,
             layout: TableLayout | str | None = None) -> DataFrame:
    """``url, fingerprint, cluster_id, keep, duplicate_of`` for every page of a
    DataFrame with ``url`` and ``fingerprint`` (signed 64-bit; null: not
    fingerprinted, always kept), and ``sketch`` when the drops are to be
    confirmed as in a crawl (:func:`fingerprint_pages` gives both).

    ``cluster_id`` is the page's component of the near-duplicate graph (null
    for a page near no other); ``keep`` is the keep list (see the module
    docstring), ``duplicate_of`` the kept page a dropped one duplicates. Join it
    back to your pages on ``url``.
    """
    F = _functions()
    k = default_distance(pages) if k is None else k
    has_sketch = "sketch" in pages.columns
    pages = pages.select("url", "fingerprint", *(["sketch"] if has_sketch else []))
    nodes = _nodes(pages)
    members = _page_nodes(pages, nodes)
    labels = components(_node_pairs(nodes, k, layout))
    # a signature shared by several pages is a component of its own
    shared = members.groupBy("node").count().where(F.col("count") > 1).select(
        "node", F.col("node").alias("component"))
    labels = labels.unionByName(shared.join(labels, "node", "left_anti"))
    labelled = members.join(labels, "node", "left").withColumnRenamed("component", "cluster_id")
    columns = ["url", "fingerprint", *(["sketch"] if has_sketch else []), "cluster_id"]
    schema = "url string, fingerprint bigint, cluster_id bigint, keep boolean, duplicate_of string"
    decided = (
        labelled.where(F.col("cluster_id").isNotNull())
        .repartition("cluster_id")
        .sortWithinPartitions("cluster_id", "url")
        .select(*columns)
        .mapInPandas(lambda batches: _greedy_keep(batches, k), schema)
    )
    single = labelled.where(F.col("cluster_id").isNull()).select(
        "url", "fingerprint", "cluster_id", F.lit(True).alias("keep"),
        F.lit(None).cast("string").alias("duplicate_of"))
    unfingerprinted = pages.where(F.col("fingerprint").isNull()).select(
        "url", "fingerprint", F.lit(None).cast("bigint").alias("cluster_id"),
        F.lit(True).alias("keep"), F.lit(None).cast("string").alias("duplicate_of"))
    return decided.unionByName(single).unionByName(unfingerprinted)


def default_partitions(n: int) -> int:
    """Shuffle partitions for ``n`` fingerprints on a small cluster (~200k a partition)."""
    return max(2, math.ceil(n / 200_000))
