"""Memory of the links a crawl keeps (``scrapy_simhash.links.DeliveredLinks``), beside
Scrapy's own duplicate filter, and the time to record and check a page's links.

``DeliveredLinks`` keeps a 64-bit hash of every distinct link of the pages delivered to
the spider; Scrapy's ``RFPDupeFilter`` keeps the hex SHA1 fingerprint of every request
it has seen. Both are measured in one run with ``tracemalloc`` over N distinct URLs
(default 1,000,000), bytes per entry. Then the corpus's documentation pages (the first
``--pages`` of each of its nine sites, when ``../shared/corpus`` is there) give the per-page CPU time of recording a page's links
and of checking a mirror copy of it, medians over pages.
Usage: ``python -m bench.bench_links [--urls N] [--pages N]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import time
import tracemalloc

from lxml import html

from evaluation.corpus import site_dir, site_pages
from scrapy_simhash.links import DeliveredLinks, page_links


def bytes_per_entry(n: int) -> tuple[float, float]:
    urls = [f"https://docs.example.org/api/{i % 977}/page-{i}.html" for i in range(n)]
    tracemalloc.start()
    links = DeliveredLinks()
    for start in range(0, n, 1000):
        links.record("https://docs.example.org/api/index.html", urls[start:start + 1000])
    ours = tracemalloc.get_traced_memory()[0] / len(links)
    tracemalloc.stop()
    del links
    tracemalloc.start()
    seen = {hashlib.sha1(u.encode()).hexdigest() for u in urls}  # RFPDupeFilter's set
    theirs = tracemalloc.get_traced_memory()[0] / len(seen)
    tracemalloc.stop()
    return ours, theirs


SITES = ("python-3.11", "django-3.2", "docs2/cmake-3.25", "docs2/libstdc++-12",
         "docs2/postgresql-15", "docs2/git-2.39", "docs3/qt-5.15", "docs3/eigen-3.4",
         "docs3/commons-lang3-3.12")


def page_times(limit: int) -> tuple[int, float, float, float] | None:
    """The first ``limit`` pages of each site: (pages, median links, record ms, check ms)."""
    pages = []
    for site in SITES:
        folder = site_dir(site)
        if folder is not None:
            pages += [(f"https://docs.example.org/{site}/{p.relative_to(folder).as_posix()}", p)
                      for p in site_pages(site)[:limit]]
    if not pages:
        return None
    links = DeliveredLinks()
    record, check, counts = [], [], []
    for url, path in pages:
        root = html.fromstring(path.read_bytes())
        start = time.thread_time()
        hrefs = page_links(root)
        links.record(url, hrefs)
        record.append((time.thread_time() - start) * 1000)
        counts.append(len(hrefs))
        mirror = url.replace("://docs.", "://mirror.", 1)
        start = time.thread_time()
        links.uncovered(mirror, page_links(root), url)
        check.append((time.thread_time() - start) * 1000)
    return len(pages), statistics.median(counts), statistics.median(record), statistics.median(check)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--pages", type=int, default=300, help="pages per site")
    args = parser.parse_args()
    print(f"# python -m bench.bench_links --urls {args.urls} --pages {args.pages}"
          f"   (load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    ours, theirs = bytes_per_entry(args.urls)
    print(f"bytes per distinct entry, {args.urls:,} URLs: DeliveredLinks {ours:.1f} "
          f"(per link), Scrapy's RFPDupeFilter set {theirs:.1f} (per request), "
          f"ratio {ours / theirs:.2f}")
    timed = page_times(args.pages)
    if timed is None:
        print("per page: skipped (../shared/corpus is not there)")
        return
    n, links, record, check = timed
    print(f"per page, {n} pages of the corpus's nine documentation sites (median {links:.0f} links): "
          f"reading and recording its links {record:.3f} ms, checking a mirror copy of it "
          f"{check:.3f} ms (medians, thread CPU time)")


if __name__ == "__main__":
    main()
