"""Serve the demo site on loopback, crawl it with scrapy-simhash, explain every drop.

Usage (from anywhere)::

    python example_project/run_demo.py              # crawl, summary, checks (exit 0 if they pass)
    python example_project/run_demo.py --all-drops  # list every drop, not a sample per kind
    python example_project/run_demo.py --distances  # fingerprint distances only, no crawl
    python example_project/run_demo.py --compare    # also crawl with the plugin off
    python example_project/run_demo.py --no-rules-table  # skip the crawl without URL rules
    python example_project/run_demo.py -- -s SIMHASH_MAX_DISTANCE=4   # extra scrapy arguments

The summary gives the pages crawled, kept and dropped, the requests saved
(links that only dropped pages carried, as the site served them, and that the
crawl never requested), then the drops with the page each duplicates and the
Hamming distance, and the closest pair of distinct pages (the product pages
share one template). The checks compare the crawl with what the site knows of
its pages, whatever order they came in: each group of copies (an article, its
printer version and partner copy; the session-id views of a listing page) kept,
once (a near copy of one of the site's first two pages, signed before its template
was known, may be kept once more: at most two such), every other page kept exactly
once, no drop naming a page of another group.

The crawl learns URL rules from the drops it confirms and skips, before download,
the requests a rule maps to a page already kept (``SIMHASH_RULES = "apply"``, which
the demo's settings opt in to; the default, ``"learn"``, only counts them). The site
is then crawled again with ``SIMHASH_RULES=off``, and one table shows the pages
fetched with and without rules, followed by the rules learned.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from w3lib.url import canonicalize_url

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from demo import content  # noqa: E402
from demo.site import LISTING_PAGES, DemoSite, classify, serve  # noqa: E402

KIND_LABELS = {  # kind of page: (one, several)
    "print": ("printer version", "printer versions"),
    "mirror": ("partner-site copy", "partner-site copies"),
    "listing": ("listing view with a new session id", "listing views with a new session id"),
    "home": ("start page fetched again", "start page fetched again"),
    "article": ("article (a copy came first)", "articles (a copy came first)"),
    "mirror-index": ("partner front page", "partner front pages"),
    "mirror-section": ("partner section page", "partner section pages"),
    "product": ("product page", "product pages"),
}
#: Rows of the drop table per kind of page, unless --all-drops.
MAX_ROWS_PER_KIND = 8
#: A page (one story, one listing page) kept at most this many times: more would be
#: the loop a kept copy teaching its site's template once started (each view of a
#: listing then had less text of its own than the next could be confirmed on, and
#: was kept too: 97 views of listing page 1 in one of 20 runs before copies with the
#: fingerprint of a page learned stopped teaching it); at most 4 in 20 runs since on
#: Scrapy 2.19. On Scrapy 2.13, which fetches the listing's views before most
#: articles, the first views are signed while the template is young and their own
#: texts change as it grows: listing page 1 was kept up to 8 times by version 7 (14
#: runs of seed 1) and up to 9 by version 8 (12 runs), each view kept because its own
#: text differed from the kept ones', not in a loop. 12 leaves that room and still
#: catches the loop.
MAX_KEPT = 12


@dataclass
class CrawlResult:
    """What one crawl produced, read back from the files scrapy wrote and the site's view log."""

    base_url: str
    returncode: int
    served: list  # demo.site.Served, in serving order
    items: list[dict]
    drops: list[dict]
    skips: list[dict]
    stats: dict
    log_path: Path
    rules_path: Path | None = None
    fetched: list[str] = field(init=False)
    dropped: dict[str, dict] = field(init=False)
    kept: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.fetched = [s.url for s in self.served if classify(s.url).kind != "robots"]
        self.dropped = {d["url"]: d for d in self.drops}
        # One view of a URL per drop (the start URL can be fetched twice: it bypasses the
        # dupefilter, so a later link to it is fetched again, and kept: a page is never
        # dropped as a copy of its own URL).
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
    items, drops, stats, log, rules = (
        outdir / "items.jsonl", outdir / "drops.jsonl", outdir / "stats.json", outdir / "crawl.log",
        outdir / "simhash.rules",
    )
    outdir.mkdir(parents=True, exist_ok=True)
    for f in (items, drops, stats, log, rules):
        f.unlink(missing_ok=True)
    cmd = [
        sys.executable, "-m", "scrapy", "crawl", "demo",
        "-a", f"start_url={site.base_url}/",
        "-O", str(items),
        "-s", f"SIMHASH_LOG_FILE={drops}",
        "-s", f"DEMO_STATS_FILE={stats}",
        "-s", f"LOG_FILE={log}",
        "-s", f"SIMHASH_RULES_PATH={rules}",
        *extra_args,
    ]
    env = dict(os.environ)
    if importlib.util.find_spec("scrapy_simhash") is None:
        # An uninstalled checkout: let the crawl find the package in it. An installed
        # package (make demo's .venv-demo) is used as installed, compiled walk included.
        repo = str(HERE.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (repo, env.get("PYTHONPATH")) if p)
    proc = subprocess.run(cmd, cwd=HERE, env=env, timeout=timeout, check=False)
    return CrawlResult(
        base_url=site.base_url,
        returncode=proc.returncode,
        served=list(site.served),
        items=_read_jsonl(items),
        drops=[r for r in _read_jsonl(drops) if r.get("event", "drop") == "drop"],
        skips=[r for r in _read_jsonl(drops) if r.get("event") == "skip"],
        stats=json.loads(stats.read_text()) if stats.exists() else {},
        log_path=log,
        rules_path=rules,
    )


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def max_distance(extra_args: Sequence[str] = ()) -> int:
    """The k the crawl uses: the project's settings with the ``-s NAME=VALUE`` of *extra_args*."""
    from scrapy.settings import Settings

    from scrapy_simhash.settings import SimhashSettings

    settings = Settings()
    settings.setmodule("demo.settings", priority="project")
    args = list(extra_args)
    for i, arg in enumerate(args):
        value = None
        if arg in ("-s", "--set") and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--set="):
            value = arg[len("--set=") :]
        elif arg.startswith("-s") and len(arg) > 2:
            value = arg[2:]
        if value and "=" in value:
            name, _, setting = value.partition("=")
            settings.set(name, setting, priority="cmdline")
    return SimhashSettings.from_settings(settings).max_distance


def check(result: CrawlResult) -> list[tuple[bool, str]]:
    """The expected outcome, as (passed, description) pairs, whatever order pages came in.

    Pages of one group are copies of one another (an article, its printer version
    and its partner copy; the session-id views of one listing page). Whichever
    copy the crawl fetched first is the one kept: each group is kept at least once
    and at most :data:`MAX_KEPT` times (below), every other view of it is dropped
    as a duplicate of a kept page of the same group, and nothing is dropped as a
    duplicate of another group.
    """
    checks: list[tuple[bool, str]] = []
    checks.append((result.returncode == 0, f"scrapy crawl exited with status {result.returncode}"))

    views = Counter(classify(u).group for u in result.fetched)
    kept_urls = set(result.kept)
    kept = Counter(classify(u).group for u in kept_urls)  # kept at one URL
    foreign = [
        d for d in result.drops
        if classify(d["url"]).group != classify(d["duplicate_of"]).group
        or d["duplicate_of"] not in kept_urls
    ]
    checks.append((
        not foreign and bool(result.drops),
        f"every drop names a kept copy of the same page ({len(result.drops) - len(foreign)}"
        f" of {len(result.drops)})",
    ))
    # Copies kept besides the first of their group, the safe side: a near copy is
    # delivered, not dropped, when it links to a page no page delivered before links
    # to (an article met after its partner copy links to its printer version: its drop
    # would cut that page off); and kept when the decision cannot confirm it: a copy of
    # one of the site's first pages (signed before its template was known, so dropped
    # only as an exact copy), or of a page signed while the template was younger (a
    # block template then may be a page's own text later: the listing's teasers,
    # quoted by few pages). What must never happen is a page kept again and again.
    for_links = result.stats.get("simhash/kept_for_links_count", 0)
    extra = 0
    worst = 0
    for label, prefix, expected in (
        ("stories (article, printer version, partner copy)", "story:", len(content.ARTICLES)),
        ("listing pages (views with any session id)", "listing:", LISTING_PAGES),
    ):
        groups = [g for g in views if g.startswith(prefix)]
        once = [g for g in groups if kept[g] >= 1]
        extra += sum(kept[g] - 1 for g in groups if kept[g] > 1)
        worst = max([worst, *(kept[g] for g in groups)])
        dropped = sum(classify(d["url"]).group in groups for d in result.drops)
        more = ", ".join(f"{g} kept {kept[g]} times" for g in sorted(groups) if kept[g] > 1)
        checks.append((
            len(once) == len(groups) == expected and dropped > 0,
            f"each of the {expected} {label} kept ({len(once)} of {len(groups)} crawled),"
            f" {dropped} other copies dropped" + (f" ({more})" if more else ""),
        ))
    checks.append((
        worst <= MAX_KEPT,
        f"copies kept besides the first: {extra} ({for_links} near copies delivered for a "
        f"link no page delivered before carried; the others not confirmed by the decision),"
        f" no page kept more than {MAX_KEPT} times (most: {worst})",
    ))
    distinct = [g for g in views if not g.startswith(("story:", "listing:"))]
    once = [g for g in distinct if kept[g] == 1]
    checks.append((
        len(once) == len(distinct),
        f"every other page kept exactly once ({len(once)} of {len(distinct)}: home, shop, "
        f"{sum(g.startswith('product:') for g in once)} products...)",
    ))
    titles = {(classify(i["url"]).group, i.get("title")) for i in result.items}
    for kind, expected in (("article", content.ARTICLES), ("product", content.PRODUCTS)):
        wanted = {
            (f"story:{x.slug}", x.title) if kind == "article" else (f"product:{x.slug}", x.name)
            for x in expected
        }
        n = len(wanted & titles)
        checks.append((n == len(expected), f"every {kind} parsed by the spider ({n} of {len(expected)})"))
    return checks


def closest_pairs(fps: dict[str, int | None]) -> list[tuple[int, str, str]]:
    """Distances between pages of different groups, closest first."""
    from scrapy_simhash.fingerprinting import hamming

    return sorted(
        (hamming(fps[x], fps[y]), x, y)
        for x, y in itertools.combinations(fps, 2)
        if fps[x] is not None and fps[y] is not None and classify(x).group != classify(y).group
    )


def site_fingerprints(seed: int | None = 0) -> tuple[DemoSite, dict[str, int | None]]:
    """One view of every distinct page of the demo site, fingerprinted as the crawl does."""
    from scrapy_simhash.fingerprinting import fingerprint

    site = DemoSite(seed=seed)
    return site, {path: fingerprint(site.handle(path)[2]) for path in site.all_pages()}


def _count(kind: str, n: int) -> str:
    one, several = KIND_LABELS.get(kind, (kind, kind))
    return f"{n} {one if n == 1 else several}"


def _rows(rows: Sequence[tuple[str, ...]], out) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip(), file=out)


def summarize(
    result: CrawlResult, k: int, *, all_drops: bool = False, seed: int | None = 0, out=sys.stdout,
    off: CrawlResult | None = None,
) -> bool:
    """Print the crawl summary, the drops, the table with and without URL rules (given the
    crawl with ``SIMHASH_RULES=off``) and the checks; True if every check passed."""
    p = result.path
    drops_by_kind = Counter(classify(d["url"]).kind for d in result.drops)
    saved = result.saved_requests()
    saved_kinds = Counter(classify(u).kind for u in saved)
    hist = Counter(d["distance"] for d in result.drops)

    print(f"\nCrawled {len(result.fetched)} pages of {result.base_url}/ with scrapy-simhash (k={k}):",
          file=out)
    kept = set(result.kept)
    again = len(result.kept) - len(kept)
    for_links = result.stats.get("simhash/kept_for_links_count", 0)
    notes = [f"{len(result.kept)} responses: {_count('page', again)} fetched again through a "
             "link, never dropped as a copy of its own URL"] if again else []
    if for_links:
        notes.append(f"{for_links} of them near copies delivered, not dropped: each linked to "
                     "a page no page delivered before linked to")
    print(f"  kept          {len(kept):>4} pages  {len(result.items)} articles and products scraped"
          + (f" ({'; '.join(notes)})" if notes else ""), file=out)
    print(f"  dropped       {len(result.drops):>4} pages  near-duplicates of kept pages: "
          + ", ".join(_count(kind, n) for kind, n in drops_by_kind.most_common()), file=out)
    print(f"  not followed  {len(saved):>4} links  found only on dropped pages, never requested"
          + (": " + ", ".join(_count(kind, n) for kind, n in saved_kinds.most_common())
             if saved else ""), file=out)
    if hist:
        print("  distances of the drops: "
              + ", ".join(f"{d}: {hist[d]}" for d in sorted(hist)), file=out)

    if result.drops:
        print("\nDropped pages:", file=out)
        rows = [("page", "duplicate of", "distance")]
        hidden: Counter[str] = Counter()
        shown: Counter[str] = Counter()
        order = {kind: i for i, kind in enumerate(KIND_LABELS)}
        for d in sorted(result.drops, key=lambda d: (order.get(classify(d["url"]).kind, 99), d["url"])):
            kind = classify(d["url"]).kind
            if not all_drops and shown[kind] >= MAX_ROWS_PER_KIND:
                hidden[kind] += 1
                continue
            shown[kind] += 1
            rows.append((p(d["url"]), p(d["duplicate_of"]), str(d["distance"])))
        _rows(rows, out)
        if hidden:
            print("  ... and " + ", ".join(f"{n} more {KIND_LABELS[kind][n > 1]}"
                                           for kind, n in hidden.items())
                  + " (--all-drops lists them)", file=out)

    _, fps = site_fingerprints(seed)
    products = {path: fp for path, fp in fps.items() if classify(path).kind == "product"}
    closest = closest_pairs(fps)
    closest_products = closest_pairs(products)
    if closest_products:
        d, x, y = closest_products[0]
        print(f"\nThe {len(products)} product pages share one template; closest pair {x} and {y}"
              f" at distance {d} (kept apart: more than k={k}).", file=out)
    if closest:
        d, x, y = closest[0]
        print(f"Closest distinct pages of the site: {x} and {y} at distance {d}.", file=out)

    rule_checks = rules_table(result, off, out) if off is not None else []
    print("\nChecks:", file=out)
    results = check(result) + rule_checks
    if closest:
        results.append((closest[0][0] > k, f"distinct pages more than k={k} apart"
                        f" (closest {closest[0][0]})"))
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
    rows = [("", "with scrapy-simhash", "without"),
            ("pages fetched", len(result.fetched), len(off.fetched)),
            ("distinct pages among them", len({classify(u).group for u in result.fetched}),
             len({classify(u).group for u in off.fetched})),
            ("items scraped", len(result.items), len(off.items)),
            ("finish reason", result.stats.get("finish_reason"), off.stats.get("finish_reason"))]
    for name, a, b in rows:
        print(f"  {name:<28}{a!s:>22}{b!s:>22}")


def learned_rules(result: CrawlResult) -> list[dict]:
    """The rules the crawl learned (active and retired first), replayed from its rules file."""
    from scrapy_simhash.rules import RuleBook, read_rules, replay

    if result.rules_path is None or not result.rules_path.exists():
        return []
    book = RuleBook()
    replay(book, read_rules(result.rules_path))
    return [r for r in book.summary() if r["state"] != "candidate" or r["support"] > 1]


def rules_table(result: CrawlResult, off: CrawlResult, out=sys.stdout) -> list[tuple[bool, str]]:
    """Print the pages fetched with and without URL rules and the rules learned; return checks."""
    def distinct(r: CrawlResult) -> set[str]:
        return {classify(u).group for u in r.kept}

    rows = [("", "with URL rules", "without (SIMHASH_RULES=off)"),
            ("pages fetched", len(result.fetched), len(off.fetched)),
            ("distinct pages kept", len(distinct(result)), len(distinct(off))),
            ("near-duplicates fetched and dropped", len(result.drops), len(off.drops)),
            ("requests skipped before download", len(result.skips), len(off.skips)),
            ("items scraped", len(result.items), len(off.items))]
    print("\nPages fetched with and without URL rules:", file=out)
    for name, a, b in rows:
        print(f"  {name:<38}{a!s:>16}{b!s:>30}", file=out)
    saved = len(off.fetched) - len(result.fetched)
    if off.fetched:
        print(f"  URL rules saved {saved} of {len(off.fetched)} fetches "
              f"({100 * saved / len(off.fetched):.0f}%): {len(result.fetched)} pages fetched "
              f"with them, {len(off.fetched)} without.", file=out)
    rules = learned_rules(result)
    if rules:
        print("\nURL rules learned (support: pairs of URLs seen to show one page, at most two"
              " a page, the instances of the precision bound; pages: distinct pages among"
              " them):", file=out)
        table = [("state", "support", "pages", "counterexamples", "skips", "rule")]
        table += [(r["state"], str(r["support"]), str(r["pages"]), str(r["counterexamples"]),
                   str(r["skips"]), r["rule"].replace(result.base_url, "")) for r in rules]
        _rows(table, out)
    wrong = [s for s in result.skips
             if classify(s["url"]).group != classify(s["duplicate_of"]).group
             or s["duplicate_of"] not in set(result.kept)]
    # A crawl keeps a page's first views before it knows the site's template only when they
    # are exact copies, so the crawl without rules may keep a near copy (say a partner copy)
    # that the crawl with rules skipped or dropped, and follow links that only that copy
    # carries. Pages reached that way alone are not lost to the rules: every other distinct
    # page the crawl without rules kept must be kept with them, and each page it kept that
    # the crawl with rules did not is named below.
    copies, originals = kept_copies(off)
    lost = sorted(distinct(off) - distinct(result))
    unexplained = [g for g in lost if g in originals]
    base = distinct(off) & originals
    text = (f"with URL rules no distinct page lost: {len(base & distinct(result))} of the "
            f"{len(base)} distinct pages the crawl without them reached through the originals "
            f"it kept, kept from {len(result.fetched)} fetches instead of {len(off.fetched)}")
    if unexplained:
        text += f"; LOST: {', '.join(unexplained)}"
    explained = [g for g in lost if g not in originals]
    if explained:
        # the two crawls ran on two servers: compare their URLs by path
        fate = {**{result.path(s["url"]): "skipped" for s in result.skips},
                **{result.path(d["url"]): "dropped" for d in result.drops}}
        paths = sorted({off.path(u) for u in off.kept if classify(u).group in explained})
        text += (f"; the crawl without them also kept {len(copies)} "
                 f"{'copy' if len(copies) == 1 else 'copies'} ("
                 + ", ".join(f"{off.path(u)} of {off.path(first)}, "
                             f"{fate.get(off.path(u), 'not requested')} with rules"
                             for u, first in copies)
                 + f") and {len(paths)} pages reached only through copies: " + ", ".join(paths))
    # Two views of one listing page both kept (the first signed while the site's template
    # was younger) are to the rule learner two pages under one session-id rule: it refutes
    # the rule, which never skips on doubt. The crawl with rules may then fetch as many
    # pages as the one without, or a few more (the two crawls meet pages in other orders).
    kept = Counter(classify(u).group for u in set(result.kept))
    refuted = sorted(g for g, n in kept.items() if g.startswith("listing:") and n > 1)
    if refuted:
        text += (f" (no saving required: {', '.join(refuted)} kept twice or more, which "
                 "refutes the session-id rule)")
    return [
        (not wrong and (bool(result.skips) or bool(refuted)),
         f"every skip names a kept copy of the same page ({len(result.skips) - len(wrong)} of "
         f"{len(result.skips)})"),
        (not unexplained and (len(result.fetched) < len(off.fetched) or bool(refuted)), text),
    ]


def kept_copies(result: CrawlResult) -> tuple[list[tuple[str, str]], set[str]]:
    """The copies *result* kept (a view of a page kept at another URL too: the original is
    the article, a listing's first view, whichever came first otherwise), each with that
    original; and the groups of the pages the crawl's links reach from its start page
    through the pages it kept, copies left out."""
    views: dict[str, list[str]] = {}
    for view in result.served:
        kind = classify(view.url)
        if kind.kind != "robots" and view.url not in result.dropped:
            urls = views.setdefault(kind.group, [])
            if view.url not in urls:
                urls.append(view.url)
    original = {g: next((u for u in urls if not classify(u).is_variant), urls[0])
                for g, urls in views.items()}
    copies = [(u, original[g]) for g, urls in views.items() for u in urls if u != original[g]]
    links: dict[str, set[str]] = {}
    for view in result.served:
        if view.url in original.values():
            links.setdefault(canonicalize_url(view.url), set()).update(
                canonicalize_url(link) for link in view.links)
    start = canonicalize_url(result.base_url + "/")
    seen, todo = {start}, [start]
    while todo:
        for link in links.get(todo.pop(), ()):
            if link not in seen:
                seen.add(link)
                todo.append(link)
    return copies, {classify(u).group for u in seen}


def distance_report(seed: int | None = 0, k: int = 3, out=sys.stdout) -> None:
    """Fingerprint every page of the site once; show distances within and across groups."""
    from scrapy_simhash.fingerprinting import fingerprint, hamming

    site, fps = site_fingerprints(seed)
    none = [path for path, fp in fps.items() if fp is None]
    print(f"{len(fps)} pages fingerprinted; no fingerprint (too few features): {none or 'none'}",
          file=out)
    print(f"\nCopies (should be within k={k}):", file=out)
    for a in content.ARTICLES:
        orig = fps[f"/news/{a.slug}.html"]
        d = {kind: fps[f"/{kind}/{a.slug}.html"] for kind in ("print", "partner")}
        print(f"  {a.slug:<24} print {_dist(orig, d['print'], hamming):>4}   "
              f"partner {_dist(orig, d['partner'], hamming):>4}   "
              f"print-partner {_dist(d['print'], d['partner'], hamming):>4}", file=out)
    views = [fingerprint(site.handle(site.listing_url(1))[2]) for _ in range(3)]
    print(f"  listing page 1, three session views: distances to the first "
          f"{[_dist(views[0], v, hamming) for v in views[1:]]}", file=out)
    print(f"\nClosest distinct pages (should be above k={k}):", file=out)
    for dist, x, y in closest_pairs(fps)[:10]:
        print(f"  {dist:>3}  {x}  {y}", file=out)
    products = {path: fp for path, fp in fps.items() if classify(path).kind == "product"}
    print("Closest product pages (one shared template):", file=out)
    for dist, x, y in closest_pairs(products)[:3]:
        print(f"  {dist:>3}  {x}  {y}", file=out)


def _dist(a: int | None, b: int | None, hamming) -> str:
    return "-" if a is None or b is None else str(hamming(a, b))


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, help="keep the crawl's files in this folder")
    parser.add_argument("--seed", type=int, default=None, help="seed of the site's per-view randomness")
    parser.add_argument("--distances", action="store_true",
                        help="print fingerprint distances between the site's pages, no crawl")
    parser.add_argument("--all-drops", action="store_true", help="list every drop, not a sample")
    parser.add_argument("--compare", action="store_true",
                        help="also crawl with the plugin off (SIMHASH_ENABLED=False) and compare")
    parser.add_argument("--no-rules-table", action="store_true",
                        help="skip the second crawl with SIMHASH_RULES=off (and its table)")
    parser.add_argument("scrapy_args", nargs="*", help="extra arguments for scrapy crawl (after --)")
    args = parser.parse_args(argv)
    k = max_distance(args.scrapy_args)
    if args.distances:
        distance_report(seed=args.seed, k=k)
        return 0
    with tempfile.TemporaryDirectory(prefix="simhash-demo-") as tmp:
        outdir = args.output or Path(tmp)
        outdir.mkdir(parents=True, exist_ok=True)
        with serve(seed=args.seed) as site:
            print(f"Serving the demo site at {site.base_url}/ ; crawling it with scrapy-simhash...",
                  flush=True)
            result = run_crawl(site, outdir, args.scrapy_args)
        if result.returncode != 0:
            print("\nLast lines of the crawl log:", file=sys.stderr)
            lines = result.log_path.read_text().splitlines() if result.log_path.exists() else []
            print("\n".join(lines[-30:]), file=sys.stderr)
        off = None
        if not args.no_rules_table and result.returncode == 0:
            with serve(seed=args.seed) as site:
                print("Crawling a fresh copy of the site again with SIMHASH_RULES=off...",
                      flush=True)
                off = run_crawl(site, outdir / "rules-off",
                                [*args.scrapy_args, "-s", "SIMHASH_RULES=off"])
        passed = summarize(result, k, all_drops=args.all_drops, seed=args.seed, off=off)
        if args.compare:
            compare(result, outdir / "without", args.seed, args.scrapy_args)
        if args.output:
            print(f"Crawl files (items, drops, stats, log) are in {outdir}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
