"""What learning a kept page costs its site's template, once the template's
windows are full (a long crawl of one host).

Each page holds ``--common`` blocks every page repeats (the template) and
``--own`` blocks of its own (new hashes); ``--pages`` pages are learned in
turn, as a crawl learns its kept pages. Printed: the median and mean time of
:meth:`~scrapy_simhash.fingerprinting.template.SiteTemplate.learn` per page,
for each thousand pages (the windows fill after ``MAX_BLOCKS / --own`` pages);
then the memory the template holds once its window of blocks seen once is
full (``tracemalloc``, the same pages learned again untimed), per block.

Usage: ``python -m bench.template_learn [--pages N] [--own N] [--common N]``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
import tracemalloc

import numpy as np

from scrapy_simhash.fingerprinting.template import MAX_BLOCKS, SiteTemplate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=6000)
    parser.add_argument("--own", type=int, default=100, help="blocks of its own per page")
    parser.add_argument("--common", type=int, default=40, help="blocks every page repeats")
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    template = SiteTemplate()
    common = rng.integers(0, 2**63, args.common, dtype=np.uint64)
    seconds = []
    for _ in range(args.pages):
        page = np.concatenate([common, rng.integers(0, 2**63, args.own, dtype=np.uint64)])
        start = time.perf_counter()
        template.learn(page)
        seconds.append(time.perf_counter() - start)
    print(f"SiteTemplate.learn: {args.pages} pages of {args.common} common and {args.own} own "
          f"blocks (windows of {MAX_BLOCKS:,} blocks), Python {platform.python_version()}")
    for first in range(0, args.pages, 1000):
        part = seconds[first : first + 1000]
        print(f"  pages {first:>5}-{first + len(part) - 1:<5}  median "
              f"{statistics.median(part) * 1e3:.3f} ms  mean {statistics.mean(part) * 1e3:.3f} ms")
    rng = np.random.default_rng(1)
    pages = [np.concatenate([common, rng.integers(0, 2**63, args.own, dtype=np.uint64)])
             for _ in range(2 * MAX_BLOCKS // max(1, args.own))]
    tracemalloc.start()
    template = SiteTemplate()
    for page in pages:
        template.learn(page)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    blocks = len(template._once) + len(template)
    print(f"  memory held, window full: {held / 2**20:.2f} MiB for {len(template._once):,} blocks "
          f"seen once and {len(template):,} counted, {held / blocks:.0f} B a block")


if __name__ == "__main__":
    main()
