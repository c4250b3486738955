"""Pairs of distinct pages whose sketches confirm each other, whatever their fingerprints.

The drop decision is a candidate (fingerprints within k bits) confirmed by the
sketches, and the first rule rests on the confirmation: the fingerprint only
chooses which pairs are compared. This takes the fingerprints out: on each
documentation site, signed as ``make bench-quality`` signs it (in file order, each
page against the template of the pages before it, as a crawl learns it), every pair
of signed pages is confirmed by their sketches alone
(:func:`~scrapy_simhash.fingerprinting.signature.confirms_many`), and of the pairs
confirmed, those of distinct pages (5-word-shingle Jaccard of the site's content
container below 0.5, ``bench.quality``'s criterion) are counted and listed. None
on a site bounds what any candidate search could join there: a larger k, a second
fingerprint, any other index. Run: ``python -m bench.sketch_pairs [SITE ...]``
(the nine sites of ``bench.quality`` by default; about 2 minutes); writes
``bench/results/sketch_pairs.txt``.
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


def site_report(site: str, seed: int) -> tuple[list[str], int]:
    """The lines of one site's report, and its distinct pairs confirmed."""
    pages = Q.load_docs(site, None, seed)
    sigs = Q.Signer(None).site(pages)
    signed = [i for i, s in enumerate(sigs.sigs) if s is not None]
    sketches = np.frombuffer(
        b"".join(sigs.sigs[i].sketch for i in signed), dtype=np.uint8
    ).reshape(-1, SG.SKETCH_BINS)
    a, b = confirmed_pairs(sketches)
    pairs = len(signed) * (len(signed) - 1) // 2
    distinct = []
    for x, y in zip(a.tolist(), b.tolist()):
        i, j = signed[x], signed[y]
        similarity = Q.jaccard(pages[i].shingles, pages[j].shingles)
        if similarity < Q.DUP_JACCARD:
            distance = F.hamming(sigs.sigs[i].fingerprint, sigs.sigs[j].fingerprint)
            distinct.append((similarity, distance, pages[i].name, pages[j].name))
    lines = [
        f"{site}: {len(signed)} of {len(pages)} pages signed, {pairs} pairs; sketches confirm "
        f"{len(a)} of them, {len(distinct)} of distinct pages (Jaccard < {Q.DUP_JACCARD})"
    ]
    for similarity, distance, x, y in sorted(distinct, reverse=True)[:SHOWN]:
        lines.append(f"  Jaccard {similarity:.2f}, {distance} bits apart: {x}  {y}")
    return lines, len(distinct)


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
    lines, total = [], 0
    for site in args.sites:
        found, distinct = site_report(site, args.seed)
        print("\n".join(found), flush=True)
        lines += found
        total += distinct
    report = "\n".join([
        f"# python -m bench.sketch_pairs {' '.join(args.sites)}   ({started}, FINGERPRINT_VERSION "
        f"{F.FINGERPRINT_VERSION}, {time.perf_counter() - t:.0f} s, load average at the start "
        f"{load})",
        "every pair of a site's signed pages confirmed by their sketches alone (no fingerprint): "
        f"{total} pairs of distinct pages confirmed on {len(args.sites)} sites",
        *lines,
    ]) + "\n"
    args.output.write_text(report, encoding="utf-8")
    print(f"{total} pairs of distinct pages confirmed; written to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
