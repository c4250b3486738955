"""Fingerprint quality on real pages: positives, negatives, precision/recall, abstentions.

Reproduces every quality figure of issue 2 in one command (``make bench-quality``):

* positives: each annotated ``web/`` page with at least 50 main-text words against a
  perturbed copy of itself (``evaluation/perturb.py``): ads inserted, dates and counters
  changed, navigation rotated, sidebar swapped, combinations of these, ~1% of the
  main-text words edited, and the article moved into another site's template;
* negatives: all pairs of distinct pages of each documentation site (same
  template), and all pairs of pages from different sites (``web/`` pages and the
  two documentation sites); a pair is a true duplicate, and not a negative, when
  the 5-word-shingle Jaccard of its neutral main texts is >= 0.5;
* the precision/recall curve for k = 0..8, the share of pages left without a
  fingerprint, and the boilerplate segment shares (``bench/boilerplate.py``).

Neutral main text (never our extractor): on the documentation sites the docs' own
content container (Sphinx ``div[role=main]`` for Python, ``div#yui-main`` for
Django); on ``web/`` the annotated main element, i.e. the deepest block holding
most of the page's hand-annotated ``with`` segments (``perturb.find_main``).

Pages are fed to ``fingerprint()`` as decoded text, as Scrapy's ``response.text``.
``--quick`` runs on a seeded sample in well under a minute (bars are indicative
there); the full run writes its output to ``bench/results/quality.txt``.
"""

from __future__ import annotations

import argparse
import importlib
import random
import re
import sys
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

import numpy as np
from w3lib.encoding import html_to_unicode


from evaluation import perturb as P
from evaluation.corpus import ABSENT_REASON, WEB_SOURCE, corpus_dir, site_dir, site_pages, web_pages

# The module, not the function of the same name that ``scrapy_simhash`` re-exports.
F = importlib.import_module("scrapy_simhash.fingerprinting.hashing")

RESULTS = Path(__file__).resolve().parent / "results" / "quality.txt"
KS = range(9)
NO_FP = 99  # distance recorded when a side has no fingerprint: never within any k
MIN_MAIN_WORDS = 50
MAX_TEMPLATE_PROSE = 100  # a template page's prose outside its main content, in words
DUP_JACCARD = 0.5
SHINGLE = 5
DOC_SITES = {"python-3.11": "//div[@role='main']", "django-3.2": "//div[@id='yui-main']"}

SINGLE = ("ads", "timestamps", "navigation", "sidebar")
BARS = {  # positive kind -> recall bar at k = 3
    "ads": 0.95,
    "timestamps": 0.95,
    "navigation": 0.95,
    "sidebar": 0.95,
    "combo-2": 0.85,
    "combo-4": 0.85,
    "edits-1%": 0.75,
    "template": 0.80,
}
MAX_SAME_SITE = 10
MAX_NO_FP = 0.05

_WORD = re.compile(r"\w+(?:[.,:'’/-]\w+)*")  # "1.11.20", "don't", "e-mail" are one word each
_DIGIT = re.compile(r"\d")


class Report:
    """Prints lines as they come and keeps them for the results file."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.bars: list[tuple[bool, str]] = []

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def bar(self, ok: bool, text: str) -> None:
        self.bars.append((ok, text))


@dataclass
class Page:
    name: str
    site: str
    text: str
    words: int = 0  # neutral main-text words
    shingles: frozenset[str] = frozenset()
    letter_shingles: frozenset[str] = frozenset()  # without words holding digits
    main_path: str | None = None
    teasers: list[str] = field(default_factory=list)
    own: frozenset[str] = frozenset()  # perturbation targets the page has itself
    outside_prose: int = 0  # words of prose paragraphs outside the main element


# --------------------------------------------------------------------------- loading


def decode(body: bytes) -> str:
    """The page text as Scrapy's ``response.text`` would hold it (charset from the page)."""
    return html_to_unicode(None, body)[1]


def shingles(text: str, digits: bool = True) -> frozenset[str]:
    """The text's 5-word shingles; ``digits=False`` leaves out words containing a digit."""
    tokens = _WORD.findall(unicodedata.normalize("NFKC", text).lower())
    if not digits:
        tokens = [t for t in tokens if not _DIGIT.search(t)]
    if len(tokens) < SHINGLE:
        return frozenset([" ".join(tokens)]) if tokens else frozenset()
    return frozenset(" ".join(tokens[i : i + SHINGLE]) for i in range(len(tokens) - SHINGLE + 1))


def _teasers(root) -> list[str]:
    """Teaser-like strings of a page: link titles, some followed by a paragraph's opening."""
    titles = []
    for a in root.iter("a"):
        t = " ".join(a.text_content().split())
        if 4 <= len(t.split()) <= 12:
            titles.append(t)
    paragraphs = [" ".join(p.text_content().split()) for p in root.iter("p")]
    paragraphs = [p for p in paragraphs if len(p.split()) >= 20]
    out = titles[:8]
    for title, para in zip(titles[8:10], paragraphs):
        out.append(f"{title}\t{' '.join(para.split()[:25])}")
    return out


def _prose_outside(root, main) -> int:
    """Words in paragraphs of 15+ words outside ``main``: a second article, a thread, comments."""
    inside = set(main.iter("p"))
    sizes = (len(p.text_content().split()) for p in P.body_of(root).iter("p") if p not in inside)
    return sum(n for n in sizes if n >= 15)


def load_web(sample: int | None, seed: int) -> list[Page]:
    entries = web_pages()
    if sample:
        entries = sorted(
            random.Random(seed).sample(entries, min(sample, len(entries))), key=lambda e: e[0]
        )
    pages = []
    for url, path, ann in entries:
        text = decode(path.read_bytes())
        root = P.parse(text)
        main = P.find_main(root, ann.get("with", []), ann.get("without", []))
        page = Page(url, f"web:{url}", text)
        if main is not None:
            main_text = main.text_content()
            page.words = len(main_text.split())
            page.shingles = shingles(main_text)
            page.letter_shingles = shingles(main_text, digits=False)
            page.main_path = root.getroottree().getpath(main)
            page.outside_prose = _prose_outside(root, main)
        page.teasers = _teasers(root)
        page.own = frozenset(
            kind
            for kind, present in (
                ("timestamps", P.count_timestamps(root)),
                ("navigation", P.nav_menus(root)),
                ("sidebar", P.sidebars(root, main)),
            )
            if present
        )
        pages.append(page)
    return pages


def load_docs(site: str, sample: int | None, seed: int) -> list[Page]:
    folder = site_dir(site)
    paths = site_pages(site)
    if sample:
        paths = sorted(random.Random(seed).sample(paths, min(sample, len(paths))))
    pages = []
    for path in paths:
        text = decode(path.read_bytes())
        root = P.parse(text)
        found = root.xpath(DOC_SITES[site]) or [P.body_of(root)]
        main_text = " ".join(el.text_content() for el in found)
        page = Page(
            f"{site}/{path.relative_to(folder)}", site, text, len(main_text.split()), shingles(main_text)
        )
        page.letter_shingles = shingles(main_text, digits=False)
        pages.append(page)
    return pages


# --------------------------------------------------------------------------- fingerprints


def trafilatura_text(text: str) -> str:
    """The page reduced to trafilatura's main text, as paragraphs (the ``--extractor`` reference)."""
    import trafilatura

    main = trafilatura.extract(text, include_comments=False) or ""
    paragraphs = "".join(f"<p>{escape(line)}</p>" for line in main.splitlines())
    return f"<html><body>{paragraphs}</body></html>"


class Fingerprinter:
    """Calls the public ``fingerprint()``; an exception counts as no fingerprint and is reported.

    With ``extractor="trafilatura"`` the page is first reduced to trafilatura's main
    text: a reference showing what a strong (10x slower) extractor reaches with
    our features and simhash.
    """

    def __init__(self, min_features: int | None, extractor: str = "ours") -> None:
        self.options = {} if min_features is None else {"min_features": min_features}
        self.prepare = trafilatura_text if extractor == "trafilatura" else None
        self.errors: list[str] = []
        self.calls = 0
        self.seconds = 0.0

    def __call__(self, text: str, name: str) -> int | None:
        self.calls += 1
        start = time.perf_counter()
        try:
            if self.prepare is not None:
                text = self.prepare(text)
            return F.fingerprint(text, **self.options)
        except Exception as exc:  # noqa: BLE001 - the harness keeps going and reports it
            self.errors.append(f"{name}: {type(exc).__name__}: {exc}")
            return None
        finally:
            self.seconds += time.perf_counter() - start

    def many(self, pages: Sequence[Page]) -> tuple[np.ndarray, np.ndarray]:
        """(uint64 fingerprints, has-fingerprint mask) of the pages, in order."""
        fps = np.zeros(len(pages), dtype=np.uint64)
        valid = np.zeros(len(pages), dtype=bool)
        for i, page in enumerate(pages):
            fp = self(page.text, page.name)
            if fp is not None:
                fps[i], valid[i] = fp, True
        return fps, valid


def distance(a: int | None, b: int | None) -> int:
    return NO_FP if a is None or b is None else F.hamming(a, b)


# --------------------------------------------------------------------------- positives


def positives(
    pages: list[Page],
    fps: np.ndarray,
    valid: np.ndarray,
    fp: Fingerprinter,
    seed: int,
    report: Report,
) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
    """Distances original -> perturbed copy per kind over pages with enough main text, and the pages."""
    eligible = [i for i, p in enumerate(pages) if p.main_path and p.words >= MIN_MAIN_WORDS]
    kinds: dict[str, Callable[[int, random.Random], list[str]]] = {
        **{k: (lambda i, rng, k=k: [k]) for k in SINGLE},
        "combo-2": lambda i, rng: sorted(rng.sample(SINGLE, 2), key=SINGLE.index),
        "combo-4": lambda i, rng: list(SINGLE),
        "edits-1%": lambda i, rng: ["edits"],
    }
    dist: dict[str, list[int]] = {k: [] for k in ("identity", *kinds, "template")}
    who: dict[str, list[str]] = {k: [] for k in dist}
    templates = [i for i in eligible if pages[i].outside_prose <= MAX_TEMPLATE_PROSE]
    inserted = {
        k: sum(k not in pages[i].own for i in eligible)
        for k in ("timestamps", "navigation", "sidebar")
    }
    for i in eligible:
        page = pages[i]
        original = int(fps[i]) if valid[i] else None
        copy = P.serialize(P.parse(page.text))
        dist["identity"].append(distance(original, fp(copy, page.name)))
        who["identity"].append(page.name)
        others = [j for j in eligible if j != i]
        rng = random.Random(P.page_seed(seed, page.name))
        teasers = pages[rng.choice(others)].teasers if others else []
        for kind, choose in kinds.items():
            html, _counts = P.perturb(
                page.text,
                choose(i, rng),
                P.page_seed(seed, page.name, kind),
                main_path=page.main_path,
                teasers=teasers or P.DEFAULT_TEASERS,
            )
            dist[kind].append(distance(original, fp(html, f"{page.name} [{kind}]")))
            who[kind].append(page.name)
        hosts = [j for j in templates if j != i]
        if hosts:
            j = rng.choice(hosts)
            article, template = P.parse(page.text), P.parse(pages[j].text)
            a_main = article.getroottree().xpath(page.main_path)[0]
            t_main = template.getroottree().xpath(pages[j].main_path)[0]
            html = P.serialize(P.transplant(article, a_main, template, t_main))
            dist["template"].append(distance(original, fp(html, f"{page.name} [template]")))
            who["template"].append(f"{page.name} in the template of {pages[j].name}")
    report(
        f"positives: {len(eligible)} of {len(pages)} web pages have >= {MIN_MAIN_WORDS} main-text words "
        "(annotated main element)"
    )
    report(
        f"  template hosts: {len(templates)} of these pages, those with <= {MAX_TEMPLATE_PROSE} words of "
        "prose paragraphs outside their main content (a template, not a second article or a thread)"
    )
    report(
        "  pages where the perturbation had nothing to change and inserted one instead: "
        + ", ".join(f"{k} {v}" for k, v in inserted.items())
    )
    return {k: np.array(v, dtype=np.int64) for k, v in dist.items()}, who


# --------------------------------------------------------------------------- negatives


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


@dataclass
class PairSet:
    """Pairs of distinct pages within distance 8, with their main-text Jaccard."""

    label: str
    total: int  # pairs with both fingerprints
    i: np.ndarray
    j: np.ndarray
    d: np.ndarray
    jac: np.ndarray
    jac_letters: np.ndarray  # the same without words holding digits (dates, version numbers)

    def within(self, k: int, duplicates: bool = False) -> np.ndarray:
        near = self.d <= k
        return near & (self.jac >= DUP_JACCARD) if duplicates else near & (self.jac < DUP_JACCARD)


def all_pairs(
    pages: Sequence[Page], fps: np.ndarray, valid: np.ndarray, label: str, cross_only: bool = False
) -> PairSet:
    """Every pair i < j of fingerprinted pages (vectorised XOR/popcount on the upper triangle)."""
    idx = np.flatnonzero(valid)
    sites = np.array([pages[i].site for i in idx])
    keep_i, keep_j, keep_d = [], [], []
    total = 0
    step = 512
    for start in range(0, len(idx), step):  # row blocks keep memory flat on large sets
        rows = idx[start : start + step]
        d = F.hamming_many(fps[rows][:, None], fps[idx][None, :])
        r, c = np.nonzero(np.triu(np.ones(d.shape, dtype=bool), k=start + 1))
        mask = np.ones(len(r), dtype=bool)
        if cross_only:
            mask = sites[start + r] != sites[c]
        total += int(mask.sum())
        near = mask & (d[r, c] <= max(KS))
        keep_i.append(rows[r[near]])
        keep_j.append(idx[c[near]])
        keep_d.append(d[r[near], c[near]].astype(np.int64))
    i = np.concatenate(keep_i) if keep_i else np.zeros(0, np.int64)
    j = np.concatenate(keep_j) if keep_j else np.zeros(0, np.int64)
    d = np.concatenate(keep_d) if keep_d else np.zeros(0, np.int64)
    jac = np.array(
        [jaccard(pages[a].shingles, pages[b].shingles) for a, b in zip(i, j)], dtype=np.float64
    )
    letters = np.array(
        [jaccard(pages[a].letter_shingles, pages[b].letter_shingles) for a, b in zip(i, j)],
        dtype=np.float64,
    )
    return PairSet(label, total, i, j, d, jac, letters)


def worst(pairs: PairSet, pages: Sequence[Page], k: int, limit: int, report: Report) -> None:
    bad = np.flatnonzero(pairs.within(k))
    order = bad[np.lexsort((pairs.jac[bad], pairs.d[bad]))][:limit]
    for n in order:
        a, b = pages[pairs.i[n]].name, pages[pairs.j[n]].name
        report(
            f"    d={pairs.d[n]}  J={pairs.jac[n]:.2f} (letters only {pairs.jac_letters[n]:.2f})  {a}  <->  {b}"
        )


# --------------------------------------------------------------------------- main


def abstentions(
    web: list[Page],
    web_ok: np.ndarray,
    docs: dict[str, list[Page]],
    docs_fp: dict[str, tuple[np.ndarray, np.ndarray]],
    report: Report,
) -> None:
    """Pages left without a fingerprint among those with enough neutral main text."""
    long_pages = np.array([p.words >= MIN_MAIN_WORDS for p in web])
    no_fp = float((~web_ok[long_pages]).mean()) if long_pages.any() else 0.0
    report(
        f"no fingerprint: web {int((~web_ok[long_pages]).sum())} of {int(long_pages.sum())} pages with "
        f">= {MIN_MAIN_WORDS} main-text words ({no_fp:.1%}); all web pages {int((~web_ok).sum())} of {len(web)}"
    )
    for site, (_, ok) in docs_fp.items():
        longs = np.array([p.words >= MIN_MAIN_WORDS for p in docs[site]])
        report(
            f"no fingerprint: {site} {int((~ok[longs]).sum())} of {int(longs.sum())} pages with >= {MIN_MAIN_WORDS} words"
        )
    report.bar(
        no_fp <= MAX_NO_FP,
        f"no fingerprint among web pages with >= {MIN_MAIN_WORDS} main-text words: {no_fp:.1%} <= 5%",
    )


def curve(
    pos: dict[str, np.ndarray], same: dict[str, PairSet], cross: PairSet, report: Report
) -> None:
    """The recall / false-match / precision table for k = 0..8."""
    report()
    report(
        "Recall of positive pairs (original vs perturbed copy) and false matches (negative pairs), per k.\n"
        "A side without a fingerprint is never a match. A negative is a pair of distinct pages with\n"
        f"main-text {SHINGLE}-word-shingle Jaccard < {DUP_JACCARD}. precision = TP / (TP + FP): TP = positive pairs\n"
        "(all kinds but identity) within k, FP = negative pairs within k (same-site docs + cross-site)."
    )
    kinds = [k for k in pos if len(pos[k])]
    report(
        "Columns: recall per positive kind, 'all' = recall over every positive pair; FP python/django = "
        "non-duplicate same-site pairs, FP cross = cross-site pairs, within k."
    )
    header = (
        f"{'k':>2} "
        + " ".join(f"{k[:10]:>10}" for k in kinds)
        + f" {'all':>6} "
        + " ".join(f"{'FP ' + s.split('-')[0]:>10}" for s in DOC_SITES)
        + f" {'FP cross':>8} {'precision':>9}"
    )
    report(header)
    for k in KS:
        recalls = [float((pos[kind] <= k).mean()) for kind in kinds]
        tp_pairs = np.concatenate([pos[kind] for kind in kinds if kind != "identity"])
        tp = int((tp_pairs <= k).sum())
        fps = [int(same[s].within(k).sum()) for s in DOC_SITES]
        fpx = int(cross.within(k).sum())
        precision = tp / (tp + sum(fps) + fpx) if tp + sum(fps) + fpx else 1.0
        report(
            f"{k:>2} "
            + " ".join(f"{r:>10.3f}" for r in recalls)
            + f" {float((tp_pairs <= k).mean()):>6.3f} "
            + " ".join(f"{n:>10d}" for n in fps)
            + f" {fpx:>8d} {precision:>9.4f}"
        )
    report(
        f"pairs examined: {len(pos.get('ads', []))} pages x {len(kinds) - 1} positive kinds; "
        + ", ".join(f"{s} {same[s].total}" for s in DOC_SITES)
        + f", cross-site {cross.total}"
    )
    for kind in kinds:
        d = pos[kind]
        finite = d[d != NO_FP]
        med = f"{np.median(finite):.0f}" if len(finite) else "-"
        report(
            f"  {kind:<11} median distance {med:>2}, no fingerprint on a side: {int((d == NO_FP).sum())}"
        )


def negatives_and_bars(
    args: argparse.Namespace,
    pos: dict[str, np.ndarray],
    who: dict[str, list[str]],
    same: dict[str, PairSet],
    cross: PairSet,
    docs: dict[str, list[Page]],
    everything: list[Page],
    report: Report,
) -> None:
    """Missed positives and false matches at the bar's k, and the bars they decide."""
    k = args.k
    kinds = list(pos)
    report()
    report(
        f"positive pairs missed at k={k}, the farthest {args.show} per kind (d=99: a side has no fingerprint):"
    )
    for kind in kinds:
        missed = np.flatnonzero(pos[kind] > k)
        for n in missed[np.argsort(-pos[kind][missed], kind="stable")][: args.show]:
            report(f"  {kind:<11} d={pos[kind][n]:>2}  {who[kind][n]}")
    report()
    for s in DOC_SITES:
        bad = int(same[s].within(k).sum())
        dup = int(same[s].within(k, duplicates=True).sum())
        numbers = int((same[s].within(k) & (same[s].jac_letters >= DUP_JACCARD)).sum())
        report(
            f"{s}: {bad} non-duplicate pairs within k={k} (of {same[s].total} pairs), {numbers} of them differ "
            f"mostly in numbers (letters-only Jaccard >= {DUP_JACCARD}); true duplicates within k={k}: {dup}"
        )
        worst(same[s], docs[s], k, 10, report)
        report.bar(
            bad <= MAX_SAME_SITE,
            f"{s}: non-duplicate pairs within k={k}: {bad} <= {MAX_SAME_SITE}",
        )
    bad = int(cross.within(k).sum())
    dup = int(cross.within(k, duplicates=True).sum())
    report(
        f"cross-site: {bad} non-duplicate pairs within k={k} (of {cross.total}); true duplicates within k={k}: {dup}"
    )
    worst(cross, everything, k, 10, report)
    report.bar(bad == 0, f"cross-site: non-duplicate pairs within k={k}: {bad} == 0")
    for kind, minimum in BARS.items():
        if kind in pos and len(pos[kind]):
            r = float((pos[kind] <= k).mean())
            report.bar(r >= minimum, f"positives {kind}: recall at k={k} {r:.3f} >= {minimum:.2f}")


def boilerplate(report: Report, limit: int | None) -> None:
    try:
        from bench.boilerplate import boilerplate_scores
    except ImportError as exc:
        report(f"boilerplate: bench/boilerplate.py not usable yet ({exc})")
        return
    try:
        s = boilerplate_scores(limit)
    except Exception as exc:  # noqa: BLE001 - the other figures still matter
        report(f"boilerplate: failed: {type(exc).__name__}: {exc}")
        report.bar(False, "boilerplate figures (bench/boilerplate.py failed)")
        return
    report(
        f"boilerplate ({s['pages']} pages, {s['with']} with / {s['without']} without segments): "
        f"with kept {s['with_kept']:.3f}, without removed {s['without_removed']:.3f}, "
        f"P {s['precision']:.3f} R {s['recall']:.3f} F1 {s['f1']:.3f}"
    )
    report.bar(
        s["with_kept"] >= 0.90, f"boilerplate: with segments kept {s['with_kept']:.3f} >= 0.90"
    )
    report.bar(
        s["without_removed"] >= 0.80,
        f"boilerplate: without segments removed {s['without_removed']:.3f} >= 0.80",
    )


def run(args: argparse.Namespace, report: Report) -> int:
    started = time.perf_counter()
    web_sample, docs_sample = (60, 120) if args.quick else (None, None)
    fp = Fingerprinter(args.min_features, args.extractor)
    report(
        f"scrapy_simhash quality harness  FINGERPRINT_VERSION={getattr(F, 'FINGERPRINT_VERSION', '?')}  "
        f"min_features={args.min_features if args.min_features is not None else getattr(F, 'DEFAULT_MIN_FEATURES', '?')}  "
        f"seed={args.seed}  mode={'quick (sample: bars indicative)' if args.quick else 'full'}"
        + ("" if args.extractor == "ours" else f"  extractor={args.extractor} (reference)")
    )
    t = time.perf_counter()
    web = load_web(web_sample, args.seed)
    docs = {site: load_docs(site, docs_sample, args.seed) for site in DOC_SITES}
    report(
        f"loaded {len(web)} web pages, "
        + ", ".join(f"{len(v)} {k}" for k, v in docs.items())
        + f" ({time.perf_counter() - t:.1f}s)"
    )

    t = time.perf_counter()
    web_fp, web_ok = fp.many(web)
    docs_fp = {site: fp.many(pages) for site, pages in docs.items()}
    report(f"fingerprinted originals ({time.perf_counter() - t:.1f}s)")

    report()
    abstentions(web, web_ok, docs, docs_fp, report)

    # -- positives
    report()
    t = time.perf_counter()
    pos, who = positives(web, web_fp, web_ok, fp, args.seed, report)
    report(f"  ({time.perf_counter() - t:.1f}s)")

    # -- negatives
    t = time.perf_counter()
    same = {site: all_pairs(docs[site], *docs_fp[site], site) for site in DOC_SITES}
    everything = web + [p for site in DOC_SITES for p in docs[site]]
    all_fp = np.concatenate([web_fp, *(docs_fp[s][0] for s in DOC_SITES)])
    all_ok = np.concatenate([web_ok, *(docs_fp[s][1] for s in DOC_SITES)])
    cross = all_pairs(everything, all_fp, all_ok, "cross-site", cross_only=True)
    report(f"negatives: all pairs computed ({time.perf_counter() - t:.1f}s)")

    curve(pos, same, cross, report)

    negatives_and_bars(args, pos, who, same, cross, docs, everything, report)

    report()
    boilerplate(report, 40 if args.quick else None)

    if fp.errors:
        report()
        report(
            f"fingerprint() raised on {len(fp.errors)} inputs (counted as no fingerprint), first ones:"
        )
        for line in fp.errors[:5]:
            report(f"  {line}")
        report.bar(False, f"fingerprint() never raises on page content ({len(fp.errors)} raised)")

    report()
    report(
        f"{fp.calls} fingerprints, {1000 * fp.seconds / max(fp.calls, 1):.1f} ms each on average; "
        f"total {time.perf_counter() - started:.0f}s"
    )
    for ok, text in report.bars:
        report(f"{'PASS' if ok else 'FAIL'}  {text}")
    failed = sum(not ok for ok, _ in report.bars)
    report(f"{len(report.bars) - failed} of {len(report.bars)} bars pass")
    return 1 if failed and args.strict else 0


def run_public(args: argparse.Namespace, report: Report, sites: list[str]) -> int:
    """Without the shared corpus: the negatives of the documentation sites that public
    sources provide (Debian's documentation packages, ``make corpus-debian``)."""
    docs_sample = 120 if args.quick else None
    fp = Fingerprinter(args.min_features, args.extractor)
    report(f"documentation sites only (no web/ pages: positives and boilerplate skipped): {', '.join(sites)}")
    docs = {site: load_docs(site, docs_sample, args.seed) for site in sites}
    docs_fp = {site: fp.many(pages) for site, pages in docs.items()}
    same = {site: all_pairs(docs[site], *docs_fp[site], site) for site in sites}
    everything = [p for site in sites for p in docs[site]]
    cross = all_pairs(
        everything,
        np.concatenate([docs_fp[s][0] for s in sites]),
        np.concatenate([docs_fp[s][1] for s in sites]),
        "cross-site",
        cross_only=True,
    )
    report(f"{'k':>2} " + " ".join(f"{'FP ' + s.split('/')[-1][:12]:>15}" for s in sites) + f" {'FP cross':>8}")
    for k in KS:
        report(
            f"{k:>2} " + " ".join(f"{int(same[s].within(k).sum()):>15d}" for s in sites)
            + f" {int(cross.within(k).sum()):>8d}"
        )
    for s in sites:
        bad = int(same[s].within(args.k).sum())
        report(f"{s}: {bad} non-duplicate pairs within k={args.k} (of {same[s].total} pairs)")
        worst(same[s], docs[s], args.k, 10, report)
        report.bar(bad <= MAX_SAME_SITE, f"{s}: non-duplicate pairs within k={args.k}: {bad} <= {MAX_SAME_SITE}")
    bad = int(cross.within(args.k).sum())
    report.bar(bad == 0, f"cross-site: non-duplicate pairs within k={args.k}: {bad} == 0")
    for ok, text in report.bars:
        report(f"{'PASS' if ok else 'FAIL'}  {text}")
    failed = sum(not ok for ok, _ in report.bars)
    report(f"{len(report.bars) - failed} of {len(report.bars)} bars pass (documentation sites only)")
    return 1 if failed and args.strict else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="seeded sample, well under a minute; no results file"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="perturbation and sampling seed (default 0)"
    )
    parser.add_argument(
        "--min-features", type=int, default=None, help="override fingerprint()'s min_features"
    )
    parser.add_argument(
        "--k", type=int, default=3, help="distance the bars are checked at (default 3)"
    )
    parser.add_argument(
        "--extractor",
        choices=("ours", "trafilatura"),
        default="ours",
        help="reference run: fingerprint trafilatura's main text instead of the page",
    )
    parser.add_argument(
        "--show", type=int, default=3, help="missed positive pairs listed per kind (default 3)"
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a bar fails")
    parser.add_argument(
        "--output",
        type=Path,
        default=RESULTS,
        help=f"results file of a full run (default {RESULTS})",
    )
    args = parser.parse_args(argv)
    if corpus_dir() is None:
        sites = [site for site in DOC_SITES if site_dir(site) is not None]
        if not sites:
            print(f"bench/quality.py needs the evaluation corpus: {ABSENT_REASON}; "
                  "make corpus-debian builds its documentation sites", file=sys.stderr)
            return 2
        print(f"{ABSENT_REASON}: {WEB_SOURCE}; measuring what public sources provide "
              "(results not written)", file=sys.stderr)
        return run_public(args, Report(), sites)
    report = Report()
    status = run(args, report)
    if not args.quick and (args.extractor == "ours" or args.output != RESULTS):
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text("\n".join(report.lines) + "\n", encoding="utf-8")
        print(f"written to {args.output}")
    return status


if __name__ == "__main__":
    sys.exit(main())
