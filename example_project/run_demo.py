"""Serve the demo site on loopback, crawl it with scrapy-simhash, explain every drop.

Usage (from anywhere)::

    python example_project/run_demo.py            # crawl, summary, checks (exit 0 if they pass)
    python example_project/run_demo.py --distances  # fingerprint distances only, no crawl
    python example_project/run_demo.py -- -s SIMHASH_MAX_DISTANCE=4   # extra scrapy arguments

The summary lists the pages crawled, kept and dropped, every drop with the page
it duplicates and the Hamming distance, and the requests saved: outlinks that
dropped pages carried (as the site served them) and that the crawl never
requested. The checks compare the crawl with what the site knows of its pages:
every printer, partner and session-id copy dropped, every distinct page kept.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from w3lib.url import canonicalize_url

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from demo import content  # noqa: E402
from demo.site import LISTING_PAGES, DemoSite, classify, serve  # noqa: E402

KIND_LABELS = {
    "listing": "session-id listing views",
    "print": "printer-version",
    "mirror": "partner-site copy",
    "home": "start page fetched again",
    "mirror-index": "partner front page",
    "mirror-section": "partner section pages",
    "article": "articles",
    "product": "product pages",
}


@dataclass
class CrawlResult:
    """What one crawl produced, read back from the files scrapy wrote and the site's view log."""

    base_url: str
    returncode: int
    served: list  # demo.site.Served, in serving order
    items: list[dict]
    drops: list[dict]
    stats: dict
    log_path: Path
    fetched: list[str] = field(init=False)
    dropped: dict[str, dict] = field(init=False)
    kept: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.fetched = [s.url for s in self.served if classify(s.url).kind != "robots"]
        self.dropped = {d["url"]: d for d in self.drops}
        # One view of a URL per drop (the start URL can be fetched twice: it bypasses the
        # dupefilter, so a later link to it is fetched again and dropped as its own copy).
        self.kept = list((Counter(self.fetched) - Counter(d["url"] for d in self.drops)).elements())

    def path(self, url: str) -> str:
        """*url* relative to the site, for display."""
        return url[len(self.base_url) :] if url.startswith(self.base_url) else url

    def saved_requests(self) -> set[str]:
        """Outlinks of dropped pages that the crawl never requested (canonical URLs)."""
        requested = {canonicalize_url(s.url) for s in self.served}
        links = {
            canonicalize_url(link)
            for s in self.served
            if s.url in self.dropped
            for link in s.links
        }
        return links - requested


def run_crawl(
    site: DemoSite, outdir: Path, extra_args: Sequence[str] = (), *, timeout: float = 300
) -> CrawlResult:
    """Run ``scrapy crawl demo`` in a subprocess against *site* and gather its outputs."""
    items, drops, stats, log = (
        outdir / "items.jsonl", outdir / "drops.jsonl", outdir / "stats.json", outdir / "crawl.log",
    )
    for f in (items, drops, stats, log):
        f.unlink(missing_ok=True)
    cmd = [
        sys.executable, "-m", "scrapy", "crawl", "demo",
        "-a", f"start_url={site.base_url}/",
        "-O", str(items),
        "-s", f"SIMHASH_LOG_FILE={drops}",
        "-s", f"DEMO_STATS_FILE={stats}",
        "-s", f"LOG_FILE={log}",
        *extra_args,
    ]
    env = dict(os.environ)
    repo = str(HERE.parent)  # so that an uninstalled checkout still finds scrapy_simhash
    env["PYTHONPATH"] = os.pathsep.join(p for p in (repo, env.get("PYTHONPATH")) if p)
    proc = subprocess.run(cmd, cwd=HERE, env=env, timeout=timeout, check=False)
    return CrawlResult(
        base_url=site.base_url,
        returncode=proc.returncode,
        served=list(site.served),
        items=_read_jsonl(items),
        drops=_read_jsonl(drops),
        stats=json.loads(stats.read_text()) if stats.exists() else {},
        log_path=log,
    )


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def check(result: CrawlResult) -> list[tuple[bool, str]]:
    """The expected outcome, as (passed, description) pairs."""
    checks: list[tuple[bool, str]] = []
    fetched_kinds = Counter(classify(u).kind for u in result.fetched)
    kept_groups = Counter(classify(u).group for u in result.kept)
    item_urls = {i["url"] for i in result.items}

    checks.append((result.returncode == 0, f"scrapy crawl exited with status {result.returncode}"))
    wrong = [
        d for d in result.drops
        if not (classify(d["url"]).is_variant or d["url"] == d["duplicate_of"])
        or classify(d["url"]).group != classify(d["duplicate_of"]).group
    ]
    checks.append((
        not wrong and bool(result.drops),
        f"every drop is a copy of the page it names ({len(result.drops) - len(wrong)}"
        f" of {len(result.drops)})",
    ))
    for kind in ("print", "mirror"):
        copies = [u for u in result.fetched if classify(u).kind == kind]
        n = sum(u in result.dropped for u in copies)
        checks.append((
            n == len(copies) and n > 0,
            f"every {KIND_LABELS[kind]} page crawled was dropped ({n} of {len(copies)})",
        ))
    listing_ok = all(kept_groups[f"listing:{n}"] == 1 for n in range(1, LISTING_PAGES + 1))
    checks.append((
        listing_ok and fetched_kinds["listing"] > LISTING_PAGES,
        f"each of the {LISTING_PAGES} listing pages kept once, the other "
        f"{fetched_kinds['listing'] - sum(kept_groups[f'listing:{n}'] for n in range(1, LISTING_PAGES + 1))}"
        " session-id views dropped",
    ))
    for kind, expected in (("article", content.ARTICLES), ("product", content.PRODUCTS)):
        urls = {f"{result.base_url}/{'news' if kind == 'article' else 'shop'}/{x.slug}.html"
                for x in expected}
        n = len(urls & item_urls)
        checks.append((n == len(expected), f"every {kind} page kept and parsed ({n} of {len(expected)})"))
    return checks


def summarize(result: CrawlResult, out=sys.stdout) -> bool:
    """Print the crawl summary and the checks; True if every check passed."""
    p = result.path
    stats = result.stats
    print(f"\nDemo site: {result.base_url}/", file=out)
    print(
        f"Crawled {len(result.fetched)} pages: {len(result.kept)} kept, "
        f"{len(result.dropped)} dropped as near-duplicates; {len(result.items)} items scraped.",
        file=out,
    )
    if stats:
        hist = {k.rsplit("/", 1)[1]: v for k, v in stats.items()
                if k.startswith("simhash/duplicate_distance_count/")}
        print(
            f"simhash stats: {stats.get('simhash/response_count', 0)} responses fingerprinted, "
            f"{stats.get('simhash/duplicate_count', 0)} duplicates, distances "
            + (", ".join(f"{d}: {n}" for d, n in sorted(hist.items(), key=lambda x: int(x[0])))
               or "none"),
            file=out,
        )

    by_kind: dict[str, list[dict]] = defaultdict(list)
    for d in result.drops:
        by_kind[classify(d["url"]).kind].append(d)
    for kind, drops in sorted(by_kind.items()):
        print(f"\nDropped {len(drops)} pages of kind {KIND_LABELS.get(kind, kind)!r}:", file=out)
        width = max(len(p(d["url"])) for d in drops)
        for d in sorted(drops, key=lambda d: d["url"]):
            print(f"  {p(d['url']):<{width}}  duplicates {p(d['duplicate_of'])}"
                  f"  (distance {d['distance']})", file=out)

    saved = result.saved_requests()
    saved_kinds = Counter(classify(u).kind for u in saved)
    print(
        f"\nRequests saved: {len(saved)} outlinks of dropped pages were never scheduled"
        + (" (" + ", ".join(f"{KIND_LABELS.get(k, k)}: {n}" for k, n in saved_kinds.most_common())
           + ")" if saved else "")
        + ".",
        file=out,
    )
    mirror_only = sorted(p(u) for u in saved if classify(u).kind in ("mirror-index", "mirror-section"))
    if mirror_only:
        print(f"  partner-only pages never visited: {', '.join(mirror_only)}", file=out)

    print("\nChecks:", file=out)
    results = check(result)
    for ok, text in results:
        print(f"  [{'ok' if ok else 'FAIL'}] {text}", file=out)
    passed = all(ok for ok, _ in results)
    print("\nAll checks passed." if passed else "\nSome checks FAILED.", file=out)
    return passed


def compare(result: CrawlResult, outdir: Path, seed: int | None, extra: Sequence[str]) -> None:
    """Crawl a fresh copy of the site with the plugin off and print both crawls side by side."""
    outdir.mkdir(parents=True, exist_ok=True)
    with serve(seed=seed) as site:
        print("\nCrawling again with SIMHASH_ENABLED=False...", flush=True)
        off = run_crawl(site, outdir, [*extra, "-s", "SIMHASH_ENABLED=False"])
    distinct = {classify(u).group for u in off.fetched}
    rows = [("", "with scrapy-simhash", "without"),
            ("pages fetched", len(result.fetched), len(off.fetched)),
            ("distinct pages among them", len({classify(u).group for u in result.fetched}),
             len(distinct)),
            ("items scraped", len(result.items), len(off.items)),
            ("finish reason", result.stats.get("finish_reason"), off.stats.get("finish_reason"))]
    for name, a, b in rows:
        print(f"  {name:<28}{a!s:>22}{b!s:>22}")


def distance_report(seed: int | None = 0, out=sys.stdout) -> None:
    """Fingerprint every page of the site once; show distances within and across groups."""
    from scrapy_simhash.fingerprint import fingerprint, hamming

    site = DemoSite(seed=seed)
    pages = list(site.all_pages())
    fps = {}
    for path in pages:
        fps[path] = fingerprint(site.handle(path)[2])
    none = [path for path, fp in fps.items() if fp is None]
    print(f"{len(pages)} pages fingerprinted; no fingerprint (too few features): {none or 'none'}",
          file=out)
    print("\nCopies (should be within k; k defaults to 3):", file=out)
    for a in content.ARTICLES:
        orig = fps[f"/news/{a.slug}.html"]
        if orig is None:
            continue
        d = {kind: fps[f"/{kind}/{a.slug}.html"] for kind in ("print", "partner")}
        print(f"  {a.slug:<24} print {_dist(orig, d['print'], hamming):>4}   "
              f"partner {_dist(orig, d['partner'], hamming):>4}", file=out)
    views = [fingerprint(site.handle(site.listing_url(1))[2]) for _ in range(3)]
    print(f"  listing page 1, three session views: distances to the first "
          f"{[_dist(views[0], v, hamming) for v in views[1:]]}", file=out)
    cross = sorted(
        (hamming(fps[x], fps[y]), x, y)
        for x, y in itertools.combinations(pages, 2)
        if fps[x] is not None and fps[y] is not None and classify(x).group != classify(y).group
    )
    print("\nClosest distinct pages (should be above k):", file=out)
    for dist, x, y in cross[:10]:
        print(f"  {dist:>3}  {x}  {y}", file=out)


def _dist(a: int | None, b: int | None, hamming) -> str:
    return "-" if a is None or b is None else str(hamming(a, b))


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, help="keep the crawl's files in this folder")
    parser.add_argument("--seed", type=int, default=None, help="seed of the site's per-view randomness")
    parser.add_argument("--distances", action="store_true",
                        help="print fingerprint distances between the site's pages, no crawl")
    parser.add_argument("--compare", action="store_true",
                        help="also crawl with the plugin off (SIMHASH_ENABLED=False) and compare")
    parser.add_argument("scrapy_args", nargs="*", help="extra arguments for scrapy crawl (after --)")
    args = parser.parse_args(argv)
    if args.distances:
        distance_report(seed=args.seed)
        return 0
    with tempfile.TemporaryDirectory(prefix="simhash-demo-") as tmp:
        outdir = args.output or Path(tmp)
        outdir.mkdir(parents=True, exist_ok=True)
        with serve(seed=args.seed) as site:
            print(f"Serving the demo site at {site.base_url}/ ; crawling it with scrapy-simhash...",
                  flush=True)
            result = run_crawl(site, outdir, args.scrapy_args)
        passed = summarize(result)
        if args.compare:
            compare(result, outdir / "without", args.seed, args.scrapy_args)
        if args.output:
            print(f"Crawl files (items, drops, stats, log) are in {outdir}")
        if result.returncode != 0:
            print("\nLast lines of the crawl log:", file=sys.stderr)
            lines = result.log_path.read_text().splitlines() if result.log_path.exists() else []
            print("\n".join(lines[-30:]), file=sys.stderr)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
