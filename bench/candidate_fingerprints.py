"""Which fingerprints find a copy as a candidate: the main text's, or its own part's too.

The drop decision is a candidate (fingerprints within k bits) confirmed by the
sketches. Its recall on the positives of ``make bench-quality`` is lost either where
the sketches refuse a copy, or where the fingerprint puts a copy more than k bits
from its original although the sketches confirm it (on web pages mostly a page
moved into another site's template, whose extractor then reads some of that
template as main text: issue 23's "template" bar). This measures, on the same
pages, copies and templates as ``bench.quality`` (web pages; with ``--docs`` the
documentation sites' too), the decision with the candidate found by:

* ``main``: the fingerprints of the two main texts (what every backend does);
* ``own``: the fingerprints of the main texts less their site's template blocks
  (each page's own template, learned from its siblings; the whole main text where
  that leaves too few features or no template is known);
* ``main + copy's own``: ``main``, or the copy's ``own`` fingerprint within k bits
  of the original's ``main`` one (an index storing one fingerprint a page, probed
  with two);
* ``both``: any of the two fingerprints of one page within k bits of any of the
  other's (an index storing both);

and, as the ceiling of any candidate search, the share of copies whose sketches
confirm them (both pages with a fingerprint), with why the others are refused
(:func:`~scrapy_simhash.fingerprinting.signature.confirmation`'s reasons).

``own`` alone makes a page's fingerprint depend on what its host's template was
when it was signed, which differs between a site and its mirror and drifts during
a crawl; the others keep the main text's fingerprint. Run:
``python -m bench.candidate_fingerprints [--docs]`` (about 2 minutes, 15 with
``--docs``; writes ``bench/results/candidates.txt``).
"""

from __future__ import annotations

import argparse
import importlib
import random
import time
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import bench
from bench import quality as Q
from evaluation.corpus import ABSENT_REASON, corpus_dir
from scrapy_simhash.fingerprinting.extract import MainText
from scrapy_simhash.fingerprinting.features import read_page

F = importlib.import_module("scrapy_simhash.fingerprinting.hashing")
SG = importlib.import_module("scrapy_simhash.fingerprinting.signature")
T = importlib.import_module("scrapy_simhash.fingerprinting.template")

RESULTS = Path(__file__).resolve().parent / "results" / "candidates.txt"
VARIANTS = ("main", "own", "main + copy's own", "both")
CEILING = "sketches confirm"


class Signed(NamedTuple):
    """A page's signature, and the fingerprint of its main text less its template."""

    signature: SG.Signature
    own: int


def own_fingerprint(page, template: T.SiteTemplate) -> int | None:
    """The fingerprint of ``page``'s main text less the blocks ``template``
    holds; None when no template is known or that leaves too few features."""
    if not template.known:
        return None
    text, tokens = read_page(page)
    main = text.main

    def kept(texts: list[str]) -> list[str]:
        if not texts:
            return texts
        counts = template.counts(T.block_hashes(texts))
        return [t for t, n in zip(texts, counts.tolist()) if n < template.threshold()]

    own = MainText(main.title, kept(main.headings), kept(main.blocks), kept(main.code))
    return F.fingerprint_of(own, tokens).fingerprint


class Signer(Q.Signer):
    """``bench.quality``'s signer, giving :class:`Signed` pages."""

    def __call__(self, text, name: str, template=None) -> Signed | None:
        return signed(self.analyse(text, name, template), text, template)


def signed(found, text, template: T.SiteTemplate | None) -> Signed | None:
    """The :class:`Signed` page of an analysis of ``text`` against ``template``."""
    if found is None or found.signature is None:
        return None
    own = None if template is None else own_fingerprint(text, template)
    return Signed(found.signature, found.signature.fingerprint if own is None else own)


def candidates(a: Signed, b: Signed, k: int) -> dict[str, bool]:
    """Whether ``b`` (the copy) is a candidate of ``a`` (the original), per variant."""
    main = F.hamming(a.signature.fingerprint, b.signature.fingerprint) <= k
    own = F.hamming(a.own, b.own) <= k
    probed = main or F.hamming(a.signature.fingerprint, b.own) <= k
    both = probed or own or F.hamming(a.own, b.signature.fingerprint) <= k
    return dict(zip(VARIANTS, (main, own, probed, both)))


def stream(signer: Signer, pages: list[Q.Page]) -> list[Signed | None]:
    """A documentation site's pages signed in file order, each against the
    template of the pages before it (``bench.quality``'s stream context)."""
    template = T.SiteTemplate()
    out: list[Signed | None] = []
    for page in pages:
        found = signer.analyse(page.text, page.name, template)
        out.append(signed(found, page.text, template))
        if found is not None:
            template.learn(found.evidence.block_hashes)
    return out


def measure(
    signer: Signer, pages: list[Q.Page], originals: list[Signed | None], chosen: list[int],
    hosts: list[Q.Page], k: int, seed: int, found: dict[str, Counter],
    refused: dict[str, Counter],
) -> None:
    """Count, per kind of copy, the copies each variant finds and why the
    sketches refuse the others."""
    signer.articles = Q.articles(pages, chosen)
    for i in chosen:
        original = originals[i]
        for kind, html, _ in Q.copies(i, pages, chosen, hosts, seed):
            copy = signer.with_siblings(html, f"{pages[i].name} [{kind}]")
            found[kind]["pages"] += 1
            if original is None or copy is None:
                refused[kind]["a page has no fingerprint"] += 1
                continue
            agreement = SG.confirmation(original.signature.sketch, copy.signature.sketch)
            if not agreement.confirms:
                refused[kind][agreement.reason] += 1
                continue
            found[kind][CEILING] += 1
            found[kind].update(v for v, ok in candidates(original, copy, k).items() if ok)


def table(title: str, found: dict[str, Counter], refused: dict[str, Counter]) -> list[str]:
    lines = ["", title, f"{'kind':12s}" + "".join(f"{v:>20s}" for v in (*VARIANTS, CEILING))]
    for kind, counts in found.items():
        lines.append(
            f"{kind:12s}"
            + "".join(f"{counts[v] / max(counts['pages'], 1):>20.3f}" for v in (*VARIANTS, CEILING))
        )
    lines += ["", "copies the sketches refuse, by reason (whatever the fingerprints):"]
    for kind, reasons in refused.items():
        lines += [f"  {kind}: {n} {reason}" for reason, n in reasons.most_common()]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", type=int, default=SG.DEFAULT_MAX_DISTANCE)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--docs", action="store_true",
                        help="also the documentation sites' copies (as bench.quality: "
                             f"{Q.DOC_POSITIVES[0]} pages a site), about 15 minutes more")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if corpus_dir() is None:
        print(f"skipped: {ABSENT_REASON}")
        return 0
    started, load = bench.started()
    t = time.perf_counter()
    web = Q.load_web(None, args.seed)
    eligible = Q.eligible_pages(web)
    signer = Signer(None)
    signer.articles = Q.articles(web, eligible)
    hosts = [web[i] for i in eligible if web[i].outside_prose <= Q.MAX_TEMPLATE_PROSE]
    originals = [signer.with_siblings(Q.marked(page), page.name) for page in web]
    groups = [("web", web, originals, eligible)]
    if args.docs:
        for site in Q.DOC_SITES:
            pages = Q.load_docs(site, None, args.seed)
            if not pages:
                continue
            chosen = sorted(random.Random(Q.P.page_seed(args.seed, site)).sample(
                Q.eligible_pages(pages), min(Q.DOC_POSITIVES[0], len(Q.eligible_pages(pages)))
            ))
            groups.append(("docs", pages, stream(signer, pages), chosen))
    results = {}
    for label, pages, signed, chosen in groups:
        found, refused = results.setdefault(
            label, ({kind: Counter() for kind in Q.KINDS}, {kind: Counter() for kind in Q.KINDS})
        )
        measure(signer, pages, signed, chosen, hosts, args.k, args.seed, found, refused)
    lines = [
        f"# python -m bench.candidate_fingerprints{' --docs' if args.docs else ''}   ({started}, "
        f"FINGERPRINT_VERSION {F.FINGERPRINT_VERSION}, {time.perf_counter() - t:.0f} s, "
        f"load average at the start {load})",
        f"recall of the drop decision (sketches confirming, candidate by each variant) at "
        f"k={args.k}, copies as in bench.quality; bars: "
        + ", ".join(f"{kind} {bar}" for kind, bar in Q.BARS.items()),
    ]
    for label, (found, refused) in results.items():
        pages = found["identity"]["pages"]
        lines += table(f"{label}: {pages} pages x {len(Q.KINDS)} copies", found, refused)
    report = "\n".join(lines) + "\n"
    print(report, end="")
    args.output.write_text(report, encoding="utf-8")
    print(f"written to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
