"""False drops on documentation sites the harness never saw (held-out check).

For each site folder: every page's signature, computed as a crawl computes it
(in file order, against the template learned from the pages before it that
nothing dropped), every pair the crawler's decision joins (fingerprints within k, sketches confirming), and among them
the pairs of distinct pages: 5-word-shingle Jaccard < 0.5 of the text of the
site's content container (an XPath; ``//body`` when the site has none). Then,
as :mod:`bench.sketch_pairs` does for the corpus, the pairs the sketches
confirm whatever their fingerprints, and the distinct ones among them with how
many bits apart they are: what a larger k could join. Last, the third path's
margin: among the pairs of distinct pages that meet all of that path but the
main texts' agreement (both trusted and sketchable, the own texts at least at
``GUARD``, not confirmed otherwise), how many of every 64 filled main bins agree
at most, against ``NEAR``.

The sites come from Debian's documentation packages, never unpacked into the
project (as for the corpus)::

    apt-get download sqlite3-doc erlang-doc python-pandas-doc rust-doc
    for d in *.deb; do dpkg -x "$d" "x/${d%%_*}"; done
    python -m bench.unseen_sites x/sqlite3-doc //body x/python-pandas-doc //main

With ``--wrong footer|navigation|random`` every page's main text is forced to
be the wrong text (:func:`evaluation.wrong_text.wrong_main`: its last block, its
link lists, a block chosen by its text) before it is signed, and one feature
gets a page a fingerprint (a short wrong text too, as in the property test): the first rule's
property (``tests/test_safety.py``) on these sites, where the decision must
still join no pair of distinct pages.

``--joined FILE`` writes every pair the decision joins (site, page, page;
tab-separated), to compare two versions' lists.

Usage: ``python -m bench.unseen_sites DIR XPATH [DIR XPATH ...] [--show N]
[--wrong HOW] [--joined FILE]``.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import TextIO
from pathlib import Path

import numpy as np
from lxml import html as lxml_html

from bench.sketch_pairs import confirmed_pairs
from evaluation.crawl_order import crawl_order
from evaluation.wrong_text import WRONG_TEXTS
import scrapy_simhash.fingerprinting.signature as SG
from scrapy_simhash.fingerprinting.signature import (
    DEFAULT_MAX_DISTANCE,
    SKETCH_BINS,
    confirmation,
)

_WORDS = re.compile(r"\w+")


def content_shingles(path: Path, xpath: str, n: int = 5) -> set[str]:
    """The word n-shingles of the text of ``xpath`` (scripts and styles left out)."""
    root = lxml_html.fromstring(path.read_bytes())
    for element in root.xpath("//script|//style|//noscript"):
        element.drop_tree()
    words = _WORDS.findall(" ".join(e.text_content() for e in root.xpath(xpath)).lower())
    return {" ".join(words[i : i + n]) for i in range(max(1, len(words) - n + 1))}


#: Main texts' agreement (of every 64 filled bins) from which the third path's
#: margin lists a pair.
MARGIN_FLOOR = 40


def path3_pairs(sketches: np.ndarray, floor: int = MARGIN_FLOOR) -> list[tuple[int, int, int]]:
    """``(main agreement of 64, i, j)`` of the pairs that meet all of the third
    path but its main texts' threshold (both trusted and sketchable, own texts
    at ``GUARD`` or more, not confirmed by the own texts), with main texts
    agreeing on at least ``floor`` of every 64 filled bins."""
    flags = sketches.view("<u8")[:, 7] & SG._BOTH_TRUSTED
    rows = np.flatnonzero(flags == SG._BOTH_TRUSTED)
    own, main = sketches[rows, : SG.OWN_BINS], sketches[rows, 64:]
    out = []
    for n in range(len(rows) - 1):
        _, om, of = SG._agree(own[n][None], own[n + 1 :], SG.GUARD)
        _, mm, mf = SG._agree(main[n][None], main[n + 1 :], SG.NEAR)
        of, mf = np.maximum(of, 1), np.maximum(mf, 1)
        hit = (mm * 64 >= floor * mf) & (om * 64 >= SG.GUARD * of) & (om * 64 < SG.CONFIRM * of)
        for m in np.flatnonzero(hit).tolist():
            out.append((int(64 * mm[m] // mf[m]), int(rows[n]), int(rows[n + 1 + m])))
    return out


def check(site: Path, xpath: str, show: int, wrong: str | None = None,
          joined: TextIO | None = None) -> int:
    paths = sorted(p for p in site.rglob("*") if p.suffix in (".html", ".htm") and p.is_file())
    sigs = crawl_order((path.read_bytes() for path in paths), wrong)
    signed = [(path, sig) for path, sig in zip(paths, sigs) if sig is not None]
    fps = np.array([s.fingerprint for _, s in signed], dtype=np.uint64)
    sketches = np.frombuffer(b"".join(s.sketch for _, s in signed), dtype=np.uint8)
    # every pair the sketches confirm; the decision's are those within k bits
    first, second = confirmed_pairs(sketches.reshape(-1, SKETCH_BINS))
    confirmed = list(zip(first.tolist(), second.tolist()))
    bits = np.bitwise_count(fps[first] ^ fps[second]).tolist()
    pairs = [pair for pair, d in zip(confirmed, bits) if d <= DEFAULT_MAX_DISTANCE]
    for i, j in pairs if joined is not None else ():
        joined.write(f"{site}\t{signed[i][0].relative_to(site)}\t{signed[j][0].relative_to(site)}\n")
    cache: dict[int, set[str]] = {}

    def shingles(i: int) -> set[str]:
        if i not in cache:
            cache[i] = content_shingles(signed[i][0], xpath)
        return cache[i]

    def distinct(found: list[tuple[int, int]]) -> list[tuple[float, int, int]]:
        """``(Jaccard, i, j)`` of the pairs of distinct pages in ``found``."""
        out = []
        for i, j in found:
            a, b = shingles(i), shingles(j)
            jaccard = len(a & b) / max(1, len(a | b))
            if jaccard < 0.5:
                out.append((jaccard, i, j))
        return sorted(out)

    false = distinct(pairs)
    print(f"{site}: {len(paths)} pages, {len(signed)} with a fingerprint, {len(pairs)} pairs "
          f"dropped at k={DEFAULT_MAX_DISTANCE}, {len(false)} of distinct pages "
          f"(Jaccard < 0.5 of {xpath})" + (f", main text forced wrong: {wrong}" if wrong else ""))
    for jaccard, i, j in false[:show]:
        print(f"   J={jaccard:.2f}  {signed[i][0].relative_to(site)}  <->  "
              f"{signed[j][0].relative_to(site)}")
    alone = distinct(confirmed)
    print(f"   sketches alone (any fingerprints): {len(confirmed)} pairs confirmed, {len(alone)} of "
          "distinct pages")
    for jaccard, i, j in alone[:show]:
        bits = int(np.bitwise_count(fps[i] ^ fps[j]))
        found = confirmation(signed[i][1].sketch, signed[j][1].sketch)
        print(f"   J={jaccard:.2f}, {bits} bits apart, {found.reason}: "
              f"{signed[i][0].relative_to(site)}  <->  {signed[j][0].relative_to(site)}")
    near = [(q, i, j) for q, i, j in path3_pairs(sketches.reshape(-1, SKETCH_BINS))
            if len(shingles(i) & shingles(j)) < 0.5 * max(1, len(shingles(i) | shingles(j)))]
    top = max((q for q, _, _ in near), default=None)
    print(f"   third path's margin: {len(near)} pairs of distinct pages meet all of it but the "
          f"main texts (at {MARGIN_FLOOR} of 64 or more); their main texts agree on at most "
          f"{'-' if top is None else top} of 64 (NEAR = {SG.NEAR})")
    for q, i, j in sorted(near, reverse=True)[:show]:
        bits = int(np.bitwise_count(fps[i] ^ fps[j]))
        print(f"   main {q}/64, {bits} bits apart: {signed[i][0].relative_to(site)}  <->  "
              f"{signed[j][0].relative_to(site)}")
    return len(false)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sites", nargs="+", help="DIR XPATH pairs")
    parser.add_argument("--show", type=int, default=5, help="false pairs shown per site")
    parser.add_argument("--wrong", choices=WRONG_TEXTS,
                        help="force every page's main text to this wrong text")
    parser.add_argument("--joined", type=argparse.FileType("w"), metavar="FILE",
                        help="write every pair the decision joins (site, page, page; tab-separated)")
    args = parser.parse_args(argv)
    if len(args.sites) % 2:
        parser.error("give each site folder with its content XPath")
    pairs = zip(args.sites[::2], args.sites[1::2])
    return 1 if sum(check(Path(d), x, args.show, args.wrong, args.joined)
                    for d, x in pairs) else 0


if __name__ == "__main__":
    sys.exit(main())
