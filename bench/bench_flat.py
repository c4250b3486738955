"""Throughput with URL rules on a site whose copies share no URL pattern, rules on and off.

Serves ``tests/dust_site.py``'s :class:`FlatSite` (20,000 pages under
``/p/<n>``, a third of them copies of another page under an unrelated number, 8
links a page) from its own process, and crawls it for ``--seconds`` (60) with
the simhash spider middleware and ``UrlRulesMiddleware``, once with
``SIMHASH_RULES=apply`` (opted in; the default, ``learn``, skips nothing) and
once with ``off``, each crawl in a fresh Python process, one after the other in
one run. Reported per crawl: responses, pages a second, duplicates dropped,
rules built (candidates and active), the crawling process's CPU seconds, pages
per CPU second and its peak RSS; then the ratios of pages crawled and of pages
per CPU second with rules to without, medians over repeats (the order of the
two crawls alternates). On a machine shared with other jobs the pages crawled
follow the CPU share the crawl gets; pages per CPU second do not. Usage:
``python -m bench.bench_flat [--seconds 60] [--pages 20000] [--repeats 1]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import time


def serve(pages: int, conn) -> None:
    from tests.dust_site import DustServer, FlatSite

    server = DustServer(FlatSite(pages=pages, seed=0))
    conn.send(server.site.port)
    conn.recv()  # until told to stop
    server.close()


def crawl(port: int, seconds: int, rules: str) -> dict:
    """One crawl in this process (``--one``): the figures as a dict."""
    import scrapy
    from scrapy.crawler import CrawlerProcess

    class FlatSpider(scrapy.Spider):
        name = "flat"

        async def start(self):
            yield scrapy.Request(f"http://127.0.0.1:{port}/p/0", dont_filter=True)

        def parse(self, response):
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href)

    settings = {
        "SPIDER_MIDDLEWARES": {"scrapy_simhash.SimhashMiddleware": 100},
        "DOWNLOADER_MIDDLEWARES": {"scrapy_simhash.UrlRulesMiddleware": 80},
        "SIMHASH_RULES": rules,
        "CLOSESPIDER_TIMEOUT": seconds,
        "LOG_LEVEL": "ERROR",
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
    }
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(FlatSpider)
    start_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu = time.process_time()
    process.crawl(crawler)
    process.start()
    stats = crawler.stats
    out = {
        "rules": rules,
        "responses": stats.get_value("response_received_count", 0),
        "dropped": stats.get_value("simhash/duplicate_count", 0),
        "elapsed": (stats.get_value("finish_time") - stats.get_value("start_time"))
        .total_seconds(),
        "cpu": time.process_time() - cpu,
        "rss_start_mb": start_rss / 1024,
        "rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "built": None,
    }
    for mw in crawler.engine.downloader.middleware.middlewares:
        if type(mw).__name__ == "UrlRulesMiddleware":
            out["built"] = f"{len(mw.book.rules)}/{mw.book.active_count}"
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--pages", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--one", nargs=2, metavar=("PORT", "RULES"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(crawl(int(args.one[0]), args.seconds, args.one[1])))
        return
    print(f"bench_flat: FlatSite({args.pages}) served from its own process, crawled "
          f"{args.seconds} s per crawl, CONCURRENT_REQUESTS=16; load {os.getloadavg()[0]:.2f}")
    print(f"  {'rules':<6}{'pages':>7}{'pages/s':>9}{'dropped':>9}{'CPU s':>7}"
          f"{'pages/CPU s':>12}{'RSS start':>10}{'RSS peak':>9}{'built/active':>13}")
    ratios, per_cpu = [], []
    for repeat in range(args.repeats):
        rows = {}
        for rules in ("apply", "off") if repeat % 2 == 0 else ("off", "apply"):
            parent, child = multiprocessing.Pipe()
            server = multiprocessing.Process(target=serve, args=(args.pages, child), daemon=True)
            server.start()
            port = parent.recv()
            run = subprocess.run(
                [sys.executable, "-m", "bench.bench_flat", "--seconds", str(args.seconds),
                 "--one", str(port), rules], capture_output=True, text=True, check=True)
            parent.send("stop")
            server.join(10)
            row = json.loads(run.stdout.strip().splitlines()[-1])
            rows[rules] = row
            print(f"  {rules:<6}{row['responses']:>7}{row['responses'] / row['elapsed']:>9.0f}"
                  f"{row['dropped']:>9}{row['cpu']:>7.1f}{row['responses'] / row['cpu']:>12.0f}"
                  f"{row['rss_start_mb']:>9.0f}M{row['rss_peak_mb']:>8.0f}M"
                  f"{str(row['built']):>13}")
        on, off = rows["apply"], rows["off"]
        ratios.append(on["responses"] / off["responses"])
        per_cpu.append((on["responses"] / on["cpu"]) / (off["responses"] / off["cpu"]))
    print(f"  pages crawled with rules / without: {statistics.median(ratios):.2f}x "
          f"(median of {len(ratios)}: {', '.join(f'{r:.2f}' for r in ratios)}); pages per "
          f"CPU second: {statistics.median(per_cpu):.2f}x "
          f"({', '.join(f'{r:.2f}' for r in per_cpu)}); load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
