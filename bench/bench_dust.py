"""Fetches saved by URL rules on the generated DUST site, and distinct pages lost (none).

Crawls ``tests/dust_site.py`` (DUST families: tracking parameters, printer views,
mirrors, a host alias, session ids; traps: pagination, sort orders, ids, templated
pages, a parameter relevant on one path only; a multilingual manual whose
untranslated pages are copies beside translated ones, its mirror folder, section
indexes, a cache-buster, multi-parameter tracking links) in-process, for each seed
and scheduler order, with URL rules applied (``SIMHASH_RULES=apply``; the default,
``learn``, skips nothing) and without (``off``). Reported per crawl: fetches of DUST
copies with and without rules and their ratio, fetches of the untranslated copies
(which no safe rule covers: "mixed"), all fetches, requests skipped, wrong skips (a
skipped URL whose group differs from the kept page named: a distinct page lost) and
distinct pages never kept. Usage: ``python -m bench.bench_dust [--seeds 0 1 2]
[--concurrency C]``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics


async def run(seeds: list[int], concurrency: int) -> None:
    from tests.dust_site import MIXED_KINDS
    from tests.test_urlrules_crawl import ORDERS, crawl_dust, dust_fetches

    print(f"bench_dust: seeds {seeds}, orders {sorted(ORDERS)}, CONCURRENT_REQUESTS={concurrency}")
    print(f"  {'seed':>4} {'order':<5} {'copies with':>12} {'without':>8} {'ratio':>6} "
          f"{'mixed':>6} {'without':>8} {'all with':>9} {'without':>8} {'skipped':>8} "
          f"{'wrong':>6} {'lost':>5}")
    saved_all: list[float] = []
    wrong_all: list[int] = []
    for seed in seeds:
        for order in sorted(ORDERS):
            extra = {"CONCURRENT_REQUESTS": concurrency, "LOG_LEVEL": "ERROR"}
            crawler, site = await crawl_dust(seed, order, extra)
            _, off = await crawl_dust(seed, order, {**extra, "SIMHASH_RULES": "off"})
            spider = crawler.spider
            wrong = sum(site.classify(s.request.url)[1] != site.classify(s.duplicate_of)[1]
                        for s in spider.skipped)
            lost = len(site.groups() - {site.classify(u)[1] for u in spider.parsed})
            w, wo = dust_fetches(site), dust_fetches(off)
            mw, mwo = dust_fetches(site, MIXED_KINDS), dust_fetches(off, MIXED_KINDS)
            saved_all.append(w / wo)
            wrong_all.append(wrong)
            print(f"  {seed:>4} {order:<5} {w:>12} {wo:>8} {w / wo:>6.2f} {mw:>6} {mwo:>8} "
                  f"{sum(site.fetched.values()):>9} {sum(off.fetched.values()):>8} "
                  f"{len(spider.skipped):>8} {wrong:>6} {lost:>5}")
    print(f"  DUST copies fetched with rules: {min(saved_all):.2f}x to {max(saved_all):.2f}x "
          f"of those without (median {statistics.median(saved_all):.2f}x); distinct pages "
          f"skipped: {sum(wrong_all)} in {len(wrong_all)} crawls")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args(argv)
    logging.getLogger("scrapy").setLevel(logging.ERROR)
    from twisted.internet import asyncioreactor

    asyncioreactor.install()
    from twisted.internet import defer, reactor

    def start() -> None:
        future = asyncio.ensure_future(run(args.seeds, args.concurrency))
        d = defer.Deferred.fromFuture(future)
        d.addErrback(lambda f: f.printTraceback())
        d.addBoth(lambda _: reactor.stop())

    reactor.callWhenRunning(start)
    reactor.run()


if __name__ == "__main__":
    main()
