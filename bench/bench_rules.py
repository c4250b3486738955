"""Per-request cost of applying learned URL rules, beside Scrapy's own duplicate filter.

A rule book is trained on a synthetic crawl of ``--hosts`` sites with
``--pages`` kept pages each: session-id, tracking-parameter, printer-path and
host-alias families, so that every host has four active rules (and some
candidates). Then a stream of requests (a third copies a rule skips, a third
new pages of those hosts, a third other hosts without rules) goes through:

- ``check``: ``RuleBook.check(url)`` alone (the algorithm);
- ``process_request``: ``UrlRulesMiddleware.process_request(request)`` of a
  middleware built from a real crawler (meta and ``dont_filter`` checks, stats,
  logging, the raised ``SkippedByRule``), on prebuilt ``Request`` objects;
- ``request_seen``: Scrapy's ``RFPDupeFilter.request_seen`` on the same
  requests (request fingerprint and set lookup), the URL-level filter every
  crawl already runs; the ratio column compares with it.

Timed as thread CPU time per batch of all requests, repeated; reported are the
medians over repeats of µs per request (and p90 over repeats). Also reported:
the learner's CPU per URL fetched while training (the same per URL at any
size when its work is O(1) amortised), and the rule book's memory per URL seen
(the growth of the process's resident set over training, divided by the URLs).
``--pages 21000`` trains on about a million URLs. Usage:
``python -m bench.bench_rules [--hosts H] [--pages N] [--repeats R]``.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import platform
import statistics
import time

import scrapy
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler

from scrapy_simhash.downloadermiddleware import SkippedByRule, UrlRulesMiddleware
from scrapy_simhash.rules import RuleBook


def train(book: RuleBook, hosts: int, pages: int) -> None:
    for h in range(hosts):
        base, alias = f"https://site{h}.example", f"https://www.site{h}.example"
        for p in range(pages):
            book.kept(f"{base}/news/story-{p}.html")
            if p % 10 == 0:
                book.duplicate(f"{base}/print/story-{p}.html", f"{base}/news/story-{p}.html")
                book.duplicate(f"{base}/news/story-{p}.html?utm_source=x&utm_medium=y",
                               f"{base}/news/story-{p}.html")
                book.duplicate(f"{alias}/news/story-{p}.html", f"{base}/news/story-{p}.html")
            book.kept(f"{base}/list?page={p}&sid=s{p}")
            if p % 10 == 0:
                book.duplicate(f"{base}/list?page={p}&sid=t{p}", f"{base}/list?page={p}&sid=s{p}")


def requests(hosts: int, pages: int, n: int) -> list[str]:
    urls = []
    for i in range(n):
        h, p = i % hosts, (i * 7919) % pages
        base = f"https://site{h}.example"
        kind = i % 6
        if kind == 0:
            urls.append(f"{base}/print/story-{p}.html")
        elif kind == 1:
            urls.append(f"{base}/list?page={p}&sid=z{i}")
        elif kind == 2:
            urls.append(f"{base}/about/team-{i}.html?lang=en")
        elif kind == 3:
            urls.append(f"{base}/news/story-{pages + i}.html")
        else:
            urls.append(f"https://other{i % 50}.example/path/{i}?q={i}")
    return urls


def rss() -> int:
    """Resident set size of this process, in bytes (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def timed(fn, items, repeats: int) -> list[float]:
    """µs per item, one figure per repeat (thread CPU time)."""
    out = []
    for _ in range(repeats):
        start = time.thread_time()
        for item in items:
            fn(item)
        out.append((time.thread_time() - start) / len(items) * 1e6)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=30000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    logging.disable(logging.INFO)  # the first skip of each rule logs at INFO

    crawler = get_crawler(Spider, {"SIMHASH_RULES_VERIFY_SHARE": 0.05})
    crawler.spider = Spider("bench")
    mw = UrlRulesMiddleware.from_crawler(crawler)
    gc.collect()
    before = rss()
    start = time.thread_time()
    train(mw.book, args.hosts, args.pages)
    trained = time.thread_time() - start
    gc.collect()
    grown = rss() - before
    events = len(mw.book._page_of)  # pages and copies learned from, one event each
    book = mw.book
    urls = requests(args.hosts, args.pages, args.requests)
    reqs = [Request(u) for u in urls]
    skipped = sum(1 for u in urls if (d := book.check(u)) is not None and not d.verify)

    def process(request: Request) -> None:
        try:
            mw.process_request(request)
        except SkippedByRule:
            pass

    from scrapy.dupefilters import RFPDupeFilter

    def seen(request: Request) -> None:
        RFPDupeFilter.request_seen(df, request)

    results = {}
    results["check"] = timed(book.check, urls, args.repeats)
    results["process_request"] = timed(process, reqs, args.repeats)
    runs = []
    for _ in range(args.repeats):
        # a fresh filter and fresh requests each repeat: Scrapy caches a request's
        # fingerprint on the request, and every request is new to the filter
        df = RFPDupeFilter.from_crawler(crawler)
        runs.extend(timed(seen, [Request(u) for u in urls], 1))
    results["request_seen"] = runs

    print(f"bench_rules: {args.hosts} hosts x {args.pages} kept pages, "
          f"{len(book.rules)} rules ({book.active_count} active), learned from {events} "
          f"fetched pages in {trained:.2f} s CPU ({trained / events * 1e6:.0f} µs a page); "
          f"memory {grown / 2**20:.0f} MiB ({grown / events:.0f} bytes a URL seen); "
          f"{len(urls)} requests, {skipped} of them skipped, {args.repeats} repeats; "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"Python {platform.python_version()}, Scrapy {scrapy.__version__}, "
          f"{platform.machine()}, thread CPU time, µs per request")
    base = statistics.median(results["request_seen"])
    print(f"  {'variant':<18}{'median':>9}{'p90':>9}{'ratio':>8}")
    for name, runs in results.items():
        med = statistics.median(runs)
        p90 = sorted(runs)[max(0, int(round(0.9 * len(runs))) - 1)]
        print(f"  {name:<18}{med:>9.2f}{p90:>9.2f}{med / base:>8.2f}")


if __name__ == "__main__":
    main()
