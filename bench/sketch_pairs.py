"""Pairs of distinct pages whose sketches confirm each other, whatever their fingerprints.

The drop decision is a candidate (fingerprints within k bits) confirmed by the
sketches. This takes the fingerprints out: each documentation site is signed as
``make bench-quality`` signs it (in file order, each page against the template of
the pages before it, as a crawl learns it), and so is each of its top folders
alone (a crawl that starts there learns another template: other pairs come
close); every pair of signed pages is confirmed by their sketches alone
(:func:`~scrapy_simhash.fingerprinting.signature.confirms_many`), and of the pairs
confirmed, those of distinct pages (5-word-shingle Jaccard of the site's content
container below 0.5, ``bench.quality``'s criterion) are counted and listed with
the path that confirmed them and how far apart their fingerprints are: within k
bits, the decision joins them. None on a site bounds what any candidate search
could join there: a larger k, a second fingerprint, any other index. Run:
``python -m bench.sketch_pairs [SITE ...]`` (the nine sites of ``bench.quality``
by default; about 3 minutes); writes ``bench/results/sketch_pairs.txt``.
"""

from __future__ import annotations

import argparse
import importlib
import time
from pathlib import Path

import numpy as np

import bench
from bench import quality as Q
from evaluation.corpus import ABSENT_REASON, corpus_dir

F = importlib.import_module("scrapy_simhash.fingerprinting.hashing")
SG = importlib.import_module("scrapy_simhash.fingerprinting.signature")

RESULTS = Path(__file__).resolve().parent / "results" / "sketch_pairs.txt"
#: Distinct pairs listed per site.
SHOWN = 5


def confirmed_pairs(sketches: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair ``i < j`` of the ``(n, SKETCH_BINS)`` sketches that confirm
    each other (the confirmation is symmetric): one row against the rows after
    it, ``n - 1`` vectorised calls."""
    first, second = [], []
    for i in range(len(sketches) - 1):
        ok = np.flatnonzero(SG.confirms_many(sketches[i], sketches[i + 1 :]))
        first.append(np.full(len(ok), i))
        second.append(ok + i + 1)
    if not first:
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    return np.concatenate(first), np.concatenate(second)


def contexts(site: str, pages: list) -> list[tuple[str, list[int]]]:
    """The orders a site is signed in: the whole site, then each top folder
    alone (a crawl that starts there learns another template, so other pairs
    come close)."""
    folders: dict[str, list[int]] = {}
    for i, page in enumerate(pages):
        parts = page.name[len(site) + 1 :].split("/")
        if len(parts) > 1:
            folders.setdefault(parts[0], []).append(i)
    found = [("whole site", list(range(len(pages))))]
    if len(folders) > 1:
        found += [(f"{name}/ alone", chosen) for name, chosen in folders.items() if len(chosen) > 1]
    return found


def context_report(pages: list, chosen: list[int]) -> tuple[int, int, list[tuple]]:
    """Pairs of ``chosen`` pages (signed alone, in file order) the sketches
    confirm: their number, the pairs examined, and the distinct ones as
    ``(Jaccard, bits apart, reason, own bins agreeing, filled, name, name)``."""
    subset = [pages[i] for i in chosen]
    sigs = Q.Signer(None).site(subset).sigs
    signed = [i for i, s in enumerate(sigs) if s is not None]
    sketches = np.frombuffer(
        b"".join(sigs[i].sketch for i in signed), dtype=np.uint8
    ).reshape(-1, SG.SKETCH_BINS)
    a, b = confirmed_pairs(sketches)
    distinct = []
    for x, y in zip(a.tolist(), b.tolist()):
        i, j = signed[x], signed[y]
        similarity = Q.jaccard(subset[i].shingles, subset[j].shingles)
        if similarity < Q.DUP_JACCARD:
            found = SG.confirmation(sigs[i].sketch, sigs[j].sketch)
            distance = F.hamming(sigs[i].fingerprint, sigs[j].fingerprint)
            distinct.append((similarity, distance, found.reason, found.matches, found.filled,
                             subset[i].name, subset[j].name))
    return len(a), len(signed) * (len(signed) - 1) // 2, distinct


def site_report(site: str, seed: int) -> tuple[list[str], int, int]:
    """The lines of one site's report, its distinct pairs confirmed in any
    context, and those the decision joins (in a context they were found in)."""
    pages = Q.load_docs(site, None, seed)
    lines, pairs, joined_pairs = [], set(), set()
    for name, chosen in contexts(site, pages):
        confirmed, examined, distinct = context_report(pages, chosen)
        joined = sum(1 for found in distinct if found[1] <= SG.DEFAULT_MAX_DISTANCE)
        lines.append(
            f"{site}, {name}: {len(chosen)} pages, {examined} pairs of signed pages; sketches "
            f"confirm {confirmed} of them, {len(distinct)} of distinct pages (Jaccard < "
            f"{Q.DUP_JACCARD}), {joined} of them within k = {SG.DEFAULT_MAX_DISTANCE} bits "
            "(joined by the decision)"
        )
        for similarity, distance, reason, matches, filled, x, y in sorted(distinct, reverse=True)[:SHOWN]:
            lines.append(f"  Jaccard {similarity:.2f}, {distance} bits apart, {reason} (own bins "
                         f"{matches}/{filled}): {x}  {y}")
        pairs.update((x, y) for *_, x, y in distinct)
        joined_pairs.update((x, y) for _, bits, *_, x, y in distinct
                            if bits <= SG.DEFAULT_MAX_DISTANCE)
    return lines, len(pairs), len(joined_pairs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sites", nargs="*", default=list(Q.DOC_SITES), metavar="SITE")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if corpus_dir() is None:
        print(f"skipped: {ABSENT_REASON}")
        return 0
    started, load = bench.started()
    t = time.perf_counter()
    lines, total, joined = [], 0, 0
    for site in args.sites:
        found, distinct, near = site_report(site, args.seed)
        print("\n".join(found), flush=True)
        lines += found
        total += distinct
        joined += near
    report = "\n".join([
        f"# python -m bench.sketch_pairs {' '.join(args.sites)}   ({started}, FINGERPRINT_VERSION "
        f"{F.FINGERPRINT_VERSION}, path 3: guard {SG.GUARD}/64, main {SG.NEAR}/64, "
        f"{time.perf_counter() - t:.0f} s, load "
        f"average at the start {load})",
        "every pair of a site's signed pages confirmed by their sketches alone (no fingerprint), "
        f"each site signed whole and each of its top folders alone: {total} pairs of distinct "
        f"pages confirmed on {len(args.sites)} sites, {joined} of them within k = "
        f"{SG.DEFAULT_MAX_DISTANCE} bits (joined by the drop decision)",
        *lines,
    ]) + "\n"
    args.output.write_text(report, encoding="utf-8")
    print(f"{total} pairs of distinct pages confirmed, {joined} joined; written to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
