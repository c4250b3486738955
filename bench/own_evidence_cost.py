"""What a page's own-text evidence costs to compute, on documentation pages.

:func:`~scrapy_simhash.fingerprinting.signature.own_evidence` (own text less
the site's template, its sketch and exact keys) on the first ``--pages`` pages
of each site, read once outside the timer, against the template of all of them
(:func:`~scrapy_simhash.fingerprinting.template.learned`): per site the median
over ``--repeat`` runs of the mean per page. To compare two versions of the
rule, run it from a checkout of each, one after the other, in one session:
``python -m bench.own_evidence_cost [SITE ...]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from evaluation.corpus import ABSENT_REASON, corpus_dir
from scrapy_simhash.fingerprinting import signature as SG
from scrapy_simhash.fingerprinting import template as T
from scrapy_simhash.fingerprinting.features import read_page

SITES = ("docs2/cmake-3.25", "docs3/qt-5.15", "docs2/libstdc++-12", "python-3.11")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sites", nargs="*", default=SITES, help=f"corpus sites ({' '.join(SITES)})")
    parser.add_argument("--pages", type=int, default=400, help="pages per site (400)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per site (5)")
    args = parser.parse_args(argv)
    root = corpus_dir()
    if root is None:
        raise SystemExit(ABSENT_REASON)
    print(f"own_evidence per page, median of {args.repeat} runs, {args.pages} pages a site; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for site in args.sites:
        files = sorted((root / site).rglob("*.html"))[: args.pages]
        pages = [read_page(path.read_bytes())[0] for path in files]
        template = T.learned(SG.own_evidence(page).block_hashes for page in pages)
        runs = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            for page in pages:
                SG.own_evidence(page, template)
            runs.append((time.perf_counter() - start) / len(pages))
        print(f"  {site}: {statistics.median(runs) * 1e6:.0f} us ({len(pages)} pages)")


if __name__ == "__main__":
    main()
