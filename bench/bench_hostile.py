"""Signing cost of hostile pages: CPU per shape, and memory kept across pages.

Speed (the default): every shape of :mod:`evaluation.hostile` at ``--size``
characters gets its signature (fingerprint and sketch: what a crawl computes,
its host's template known, so the own text's sketch is made where the page
gets one) on both paths a crawl takes:

* ``bytes``: ``signature(html_bytes)``: our parse (cut to ``MAX_HTML_CHARS``)
  and the rest; ``parse`` is the parse alone, ``sig`` the rest
  (``signature(tree)``);
* ``parsel``: the middleware's read, ``with plain_elements(root):
  signature(root)`` on ``Selector(text=html).root``; ``parse`` is parsel's
  parse (Scrapy does it for the spider, whatever this plugin does: the plugin
  cannot bound it), ``sig`` is ours.

Figures are CPU milliseconds (``time.thread_time``, so other processes on the
machine barely move them), the median of ``--repeat`` runs, each on a fresh
tree. The bar: no ``sig`` above 50 ms, but for a page of a million CJK
characters (the ``han`` and ``hiragana`` rows: a token a character), 100 ms.
``sig MB``: how far the bytes path's signature lifts the process's peak RSS
above its RSS before (one run; ``/proc/self/clear_refs`` resets the peak). The
bar: 60 MB.

Memory (``--memory``): RSS after signing ``--pages`` ordinary pages
(the corpus web pages, cycled) and after as many crafted pages whose class and
id values are all new (:func:`evaluation.hostile.crafted_cache_page`), each
series in a fresh process, through the middleware's path. The bar: the hostile
series within 50 MB of the ordinary one.

Usage: ``python -m bench.bench_hostile [--size N] [--repeat R] [--shape NAME]``,
``python -m bench.bench_hostile --memory [--pages N]``.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from parsel import Selector

from evaluation.hostile import SHAPES, crafted_cache_page
from scrapy_simhash.fingerprinting.extract import parse_html, plain_elements

SG = importlib.import_module("scrapy_simhash.fingerprinting.signature")
EX = importlib.import_module("scrapy_simhash.fingerprinting.extract")
TP = importlib.import_module("scrapy_simhash.fingerprinting.template")

#: No page may cost more CPU for its signature than this (ms).
BAR_MS = 50.0
#: ... but a page of a million CJK characters (a token each), this (ms).
CJK_BAR_MS = 100.0
CJK_SHAPES = frozenset(("han text", "han paragraphs", "hiragana text"))
#: No signature may lift the peak RSS by more than this (MB).
SIG_BAR_MB = 60.0
#: Hostile pages may keep at most this much more memory than ordinary ones (MB).
BAR_MB = 50.0


def cpu_ms(prepare: Callable[[], object], fn: Callable[[object], object], repeat: int) -> float:
    """Median CPU milliseconds of ``fn(prepare())`` (``prepare`` not timed)."""
    times = []
    arg = None
    for _ in range(repeat):
        # The previous tree is freed before the next is made: freed after it,
        # the next walk can cost several times more (the allocator's layout).
        arg = None
        gc.collect()
        arg = prepare()
        gc.collect()
        start = time.thread_time()
        fn(arg)
        times.append(time.thread_time() - start)
    return statistics.median(times) * 1e3


def _status(field: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def peak_mb(prepare: Callable[[], object], fn: Callable[[object], object]) -> float:
    """How far ``fn(prepare())`` lifts the peak RSS above the RSS before it (MB)."""
    gc.collect()
    arg = prepare()
    gc.collect()
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # the peak (VmHWM) starts again from the current RSS
    before = _status("VmRSS")
    fn(arg)
    return _status("VmHWM") - before


def _known_template() -> object:
    """A host's template once known, as a crawl signs pages after its first
    two: so that the own text's sketch is computed where a page gets one."""
    template = TP.SiteTemplate()
    for n in range(TP.KNOWN_PAGES):
        page = f"<html><body><nav>Home About</nav><p>page {n} of the site</p></body></html>"
        template.learn(SG.analyse(page).evidence.block_hashes)
    return template


TEMPLATE = _known_template()


def signature(root) -> object:
    """What a crawl computes for a page, its host's template known."""
    return SG.signature(root, template=TEMPLATE)


def parsel_signature(root) -> object:
    with plain_elements(root):
        return signature(root)


def speed(size: int, repeat: int, names: list[str] | None) -> list[str]:
    lines = [
        f"hostile shapes of ~{size:,} characters, CPU ms (median of {repeat}), "
        f"compiled walk {'built' if EX._walk is not None else 'NOT built (pure Python)'}",
        "",
        f"{'shape':<26}{'bytes parse':>12}{'bytes sig':>10}{'parsel parse':>14}{'parsel sig':>11}"
        f"{'sig MB':>8}",
    ]
    worst = (0.0, "")
    worst_cjk = (0.0, "")
    worst_mb = (0.0, "")
    for name, make in SHAPES.items():
        if names and name not in names:
            continue
        text = make(size)
        data = text.encode("utf-8")
        bytes_parse = cpu_ms(lambda: data, parse_html, repeat)
        bytes_fp = cpu_ms(lambda: parse_html(data), signature, repeat)
        parsel_parse = cpu_ms(lambda: text, lambda text: Selector(text=text).root, repeat)
        parsel_fp = cpu_ms(lambda: Selector(text=text).root, parsel_signature, repeat)
        grown = peak_mb(lambda: parse_html(data), signature)
        lines.append(
            f"{name:<26}{bytes_parse:>12.1f}{bytes_fp:>10.1f}{parsel_parse:>14.1f}{parsel_fp:>11.1f}"
            f"{grown:>8.1f}"
        )
        rows = ((bytes_fp, f"{name}, bytes"), (parsel_fp, f"{name}, parsel"))
        if name in CJK_SHAPES:
            worst_cjk = max(worst_cjk, *rows)
        else:
            worst = max(worst, *rows)
        worst_mb = max(worst_mb, (grown, name))
    lines += [
        "",
        f"{'PASS' if worst[0] <= BAR_MS else 'FAIL'}  worst signature CPU "
        f"{worst[0]:.1f} ms ({worst[1]}) <= {BAR_MS:.0f} ms",
    ]
    if worst_cjk[1]:
        lines.append(
            f"{'PASS' if worst_cjk[0] <= CJK_BAR_MS else 'FAIL'}  worst CJK signature CPU "
            f"{worst_cjk[0]:.1f} ms ({worst_cjk[1]}) <= {CJK_BAR_MS:.0f} ms"
        )
    lines += [
        f"{'PASS' if worst_mb[0] <= SIG_BAR_MB else 'FAIL'}  worst peak RSS growth "
        f"{worst_mb[0]:.1f} MB ({worst_mb[1]}) <= {SIG_BAR_MB:.0f} MB",
        "The parse is lxml's: ours is cut to MAX_HTML_CHARS characters; parsel's "
        "(Scrapy's response.selector) is not the plugin's to bound.",
    ]
    return lines


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def memory_series(kind: str, pages: int) -> float:
    """RSS (MB) after ``pages`` pages of ``kind`` through the middleware's path."""
    if kind == "ordinary":
        from evaluation.corpus import web_pages

        paths = [path for _u, path, _a in web_pages()]
        if not paths:
            raise SystemExit("the corpus is absent: no ordinary pages")

        def page(n: int) -> str:  # read each time: neither series holds its pages
            return paths[n % len(paths)].read_bytes().decode("utf-8", "replace")

    else:
        page = crafted_cache_page
    for n in range(pages):
        parsel_signature(Selector(text=page(n)).root)
    gc.collect()
    return rss_mb()


def memory(pages: int) -> list[str]:
    rss = {}
    for kind in ("ordinary", "hostile"):
        out = subprocess.run(
            [sys.executable, "-m", "bench.bench_hostile", "--series", kind, "--pages", str(pages)],
            check=True, capture_output=True, text=True,
        )
        rss[kind] = float(out.stdout.split()[-1])
    grown = rss["hostile"] - rss["ordinary"]
    return [
        f"RSS after {pages:,} pages through the middleware's path, each series in a fresh process",
        f"ordinary (corpus web pages, cycled): {rss['ordinary']:.0f} MB",
        f"hostile (class/id values all new):   {rss['hostile']:.0f} MB",
        f"{'PASS' if grown <= BAR_MB else 'FAIL'}  hostile - ordinary = {grown:.0f} MB "
        f"<= {BAR_MB:.0f} MB",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=4_000_000, help="characters per page")
    parser.add_argument("--repeat", type=int, default=3, help="runs per shape and path")
    parser.add_argument("--shape", action="append", help="only this shape (repeatable)")
    parser.add_argument("--memory", action="store_true", help="measure memory kept instead")
    parser.add_argument("--pages", type=int, default=10_000, help="pages per memory series")
    parser.add_argument("--series", choices=("ordinary", "hostile"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.series:
        print(f"{memory_series(args.series, args.pages):.1f}")
        return 0
    lines = memory(args.pages) if args.memory else speed(args.size, args.repeat, args.shape)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
