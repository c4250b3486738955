"""Speed of the fingerprint pipeline on the corpus web pages, with peers side by side.

Stages, each timed per page as the median of ``--repeat`` runs, then the median
and p90 over pages (one process, one core):

* ``parse``: HTML bytes -> lxml tree (:func:`scrapy_simhash.fingerprinting.extract.parse_html`,
  decoding included);
* ``extract``: tree -> title, headings, main-text blocks;
* ``features``: main text -> weighted spot signatures;
* ``simhash``: features -> 64-bit fingerprint;
* ``tree -> fp``: extract + features + simhash on an already parsed tree;
* ``tree -> signature``: what the index stores, fingerprint and sketch
  (:func:`scrapy_simhash.signature`) against a known site template (as a crawl
  signs a page once its site's template is learned), on an already parsed tree (bar: 0.7 ms,
  issue 12);
* ``tree -> signature, fresh tree``: one call on a newly parsed tree, as a
  crawl reads each page once (the median of repeats above is mostly of calls
  on a tree read before: strings' hashes cached, the CPU's caches warm);
* ``tree -> signature, Python loops``: the same with the compiled token loops
  (``scrapy_simhash.fingerprinting._tokens``) switched off, as a pure-Python
  install runs them (same signatures);
* ``bytes -> fp``: the same including the parse (bar: 2.5 ms);
* ``parsel tree -> fp``: extract + features + simhash on ``Selector(text).root``,
  the tree Scrapy's ``response.selector`` holds (lxml.html element classes,
  comments kept);
* ``parsel, plain elements``: the same inside
  :func:`scrapy_simhash.fingerprinting.extract.plain_elements`, as the middleware reads it
  (plain lxml element objects instead of lxml.html's Python class lookup);
* ``tree -> fp, Python walk`` and ``bytes -> fp, Python walk``: ``tree -> fp``
  and ``bytes -> fp`` with the compiled walk (``scrapy_simhash.fingerprinting._walk``) switched
  off, as a pure-Python install runs them (same fingerprints).

Peers, timed in the same run on the same pages. Each gets the page's main text
as one ``str`` (our extractor's title, headings and blocks joined by newlines,
extracted outside the timer; they have no extractor of their own here):

* ``simhash.Simhash(text)`` (PyPI ``simhash``, 64 bits, its default tokenizer);
* ``trafilatura.deduplication.Simhash(text)``;
* ``datasketch.MinHash(num_perm=128)`` updated with the UTF-8 bytes of the
  text's whitespace-separated words (``update_batch``).

Usage: ``python -m bench.bench_fingerprint [--limit N] [--repeat R]`` (CPU time).
"""

from __future__ import annotations

import argparse
import importlib
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path


from evaluation.corpus import ABSENT_REASON, corpus_dir, web_pages
from scrapy_simhash.fingerprinting.extract import extract, parse_html, plain_elements

FP = importlib.import_module("scrapy_simhash.fingerprinting.hashing")
SG = importlib.import_module("scrapy_simhash.fingerprinting.signature")
TM = importlib.import_module("scrapy_simhash.fingerprinting.template")
FE = importlib.import_module("scrapy_simhash.fingerprinting.features")
EX = importlib.import_module("scrapy_simhash.fingerprinting.extract")
COMPILED = EX._walk
COMPILED_TOKENS = FE._tokens


def switched_off(module, name: str, fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` with the compiled module ``module.name`` switched off (None)."""

    def call() -> object:
        compiled = getattr(module, name)
        setattr(module, name, None)
        try:
            return fn()
        finally:
            setattr(module, name, compiled)

    return call


def python_walk(fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` with the compiled walk switched off."""
    return switched_off(EX, "_walk", fn)


def python_loops(fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` with the compiled token loops switched off."""
    return switched_off(FE, "_tokens", fn)


def plain_fingerprint(root) -> int | None:
    """The middleware's read of ``response.selector.root``."""
    with plain_elements(root):
        return FP.fingerprint(root)


def median_of(fn: Callable[[], object], repeat: int) -> float:
    """Median CPU seconds (``time.thread_time``: other processes barely move it)
    of ``repeat`` calls (the first on a fresh tree, as in a crawl)."""
    times = []
    for _ in range(repeat):
        start = time.thread_time()
        fn()
        times.append(time.thread_time() - start)
    return statistics.median(times)


def peer_time(fn: Callable[[], object], repeat: int, failures: dict[str, int], name: str):
    """``median_of``, or None when the peer raises (counted in ``failures``)."""
    try:
        return median_of(fn, repeat)
    except (OverflowError, ValueError):
        failures[name] = failures.get(name, 0) + 1
        return None


def summary(times: list[float]) -> tuple[float, float]:
    """(median, p90) in milliseconds."""
    ordered = sorted(times)
    return statistics.median(ordered) * 1e3, ordered[int(0.9 * (len(ordered) - 1))] * 1e3


def run(limit: int | None = None, repeat: int = 5) -> list[str]:
    from datasketch import MinHash
    from parsel import Selector
    from simhash import Simhash as PyPISimhash
    from trafilatura.deduplication import Simhash as TrafilaturaSimhash

    pages = [path.read_bytes() for _url, path, _ann in web_pages()[:limit]]
    stages: dict[str, list[float]] = {
        k: []
        for k in (
            "parse", "extract", "features", "simhash", "tree -> fp", "tree -> signature",
            "tree -> signature, fresh tree", "tree -> signature, Python loops", "bytes -> fp",
            "parsel tree -> fp", "parsel, plain elements",
            "tree -> fp, Python walk", "bytes -> fp, Python walk",
        )
    }
    peers: dict[str, list[float]] = {
        k: [] for k in ("simhash (PyPI)", "trafilatura Simhash", "datasketch MinHash")
    }
    sizes, text_sizes = [], []
    failures: dict[str, int] = {}

    def minhash(text: str) -> MinHash:
        m = MinHash(num_perm=128)
        m.update_batch([w.encode("utf-8") for w in text.split()])
        return m

    # As a crawl signs pages: against their site's template, known (here one
    # template learned from every page: the masks and the trust test are run).
    template = TM.learned(SG.analyse(parse_html(data)).evidence.block_hashes for data in pages)

    def signed(root):
        return SG.signature(root, template=template)

    for data in pages:
        root = parse_html(data)
        main = extract(root)
        feats = FE.main_text_features(main)
        text = "\n".join([main.title, *main.headings, *main.blocks])
        parsel_root = Selector(text=data.decode("utf-8", errors="replace")).root
        sizes.append(len(data))
        text_sizes.append(len(text))
        stages["parse"].append(median_of(lambda: parse_html(data), repeat))
        stages["extract"].append(median_of(lambda: extract(root), repeat))
        stages["features"].append(median_of(lambda: FE.main_text_features(main), repeat))
        stages["simhash"].append(median_of(lambda: FP.simhash(feats), repeat))
        stages["tree -> fp"].append(median_of(lambda: FP.fingerprint(root), repeat))
        stages["tree -> signature"].append(median_of(lambda: signed(root), repeat))
        fresh = parse_html(data)
        stages["tree -> signature, fresh tree"].append(median_of(lambda: signed(fresh), 1))
        stages["tree -> signature, Python loops"].append(
            median_of(python_loops(lambda: signed(root)), repeat)
        )
        stages["bytes -> fp"].append(median_of(lambda: FP.fingerprint(data), repeat))
        stages["parsel tree -> fp"].append(median_of(lambda: FP.fingerprint(parsel_root), repeat))
        stages["parsel, plain elements"].append(
            median_of(lambda: plain_fingerprint(parsel_root), repeat)
        )
        stages["tree -> fp, Python walk"].append(
            median_of(python_walk(lambda: FP.fingerprint(root)), repeat)
        )
        stages["bytes -> fp, Python walk"].append(
            median_of(python_walk(lambda: FP.fingerprint(data)), repeat)
        )
        for name, fn in (
            ("simhash (PyPI)", lambda: PyPISimhash(text)),
            ("trafilatura Simhash", lambda: TrafilaturaSimhash(text)),
            ("datasketch MinHash", lambda: minhash(text)),
        ):
            seconds = peer_time(fn, repeat, failures, name)
            if seconds is not None:
                peers[name].append(seconds)

    lines = [
        f"{len(pages)} corpus web pages (median {statistics.median(sizes) / 1024:.0f} KiB HTML, "
        f"median main text {statistics.median(text_sizes):.0f} chars), median of {repeat} per page (CPU time), "
        f"Python {platform.python_version()}, one core, "
        f"compiled walk {'built' if COMPILED is not None else 'NOT built (pure Python)'}, "
        f"compiled token loops {'built' if COMPILED_TOKENS is not None else 'NOT built'}",
        "",
        f"{'stage':<32}{'median ms':>10}{'p90 ms':>10}{'pages/s':>10}",
    ]
    for name, times in stages.items():
        med, p90 = summary(times)
        lines.append(f"{name:<32}{med:>10.3f}{p90:>10.3f}{1e3 / med:>10.0f}")
    ours, _ = summary(stages["tree -> fp"])
    lines += [
        "",
        "peers on the main text (str), same pages, same run; "
        "ratio = peer median / ours (tree -> fp)",
        f"{'peer':<32}{'median ms':>10}{'p90 ms':>10}{'pages/s':>10}{'ratio':>8}",
    ]
    for name, times in peers.items():
        med, p90 = summary(times)
        lines.append(f"{name:<32}{med:>10.3f}{p90:>10.3f}{1e3 / med:>10.0f}{med / ours:>8.1f}")
    for name, count in failures.items():
        lines.append(
            f"  {name} raised on {count} pages (left out of its figures; PyPI simhash 2.1 "
            "overflows uint8 weights under numpy 2 when a shingle occurs > 255 times)"
        )
    tree, _ = summary(stages["tree -> fp"])
    signed, _ = summary(stages["tree -> signature"])
    python_signed, _ = summary(stages["tree -> signature, Python loops"])
    full, _ = summary(stages["bytes -> fp"])
    python_tree, _ = summary(stages["tree -> fp, Python walk"])
    lines += [
        "",
        f"compiled walk: tree -> fp {python_tree / tree:.2f}x faster than the Python walk",
        f"compiled token loops: tree -> signature {python_signed / signed:.2f}x faster "
        "than the Python loops",
        "",
        f"{'PASS' if signed <= 0.7 else 'FAIL'}  tree -> signature median {signed:.3f} ms "
        "<= 0.7 ms (both signatures from a parsed tree, issue 12)",
        f"{'PASS' if full <= 2.5 else 'FAIL'}  bytes -> fp median {full:.3f} ms <= 2.5 ms",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="first N pages only")
    parser.add_argument("--repeat", type=int, default=5, help="runs per page and stage")
    args = parser.parse_args(argv)
    if corpus_dir() is None:
        print(ABSENT_REASON)
        return 1
    print("\n".join(run(args.limit, args.repeat)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
