"""Drop-decision quality on real pages: positives, negatives, precision/recall, abstentions.

Reproduces every quality figure of issues 2, 12 and 23 in one command (``make bench-quality``).
The decision judged is the one a crawl makes: ``scrapy_simhash.is_duplicate`` on two
``scrapy_simhash.signature()`` values -- fingerprints within k bits (the candidate) whose
sketches agree (the confirmation). The fingerprint alone is reported beside it.

* positives: each ``web/`` page with at least 50 main-text words (annotated main element),
  and a seeded sample of the pages of each documentation site (its content container),
  against a perturbed copy of itself (``evaluation/perturb.py``): ads inserted, dates and
  counters changed, navigation rotated, sidebar swapped, combinations of these, ~1% of the
  main-text words edited, and the content moved into another site's template (a ``web/``
  page's); web and documentation pages are reported separately;
* negatives: all pairs of distinct pages of each of the six documentation sites (same
  template: ``python-3.11``, ``django-3.2`` and the four ``docs2/`` sites; ``--sites`` picks
  others, the three ``docs3/`` API references among them), and all pairs of pages from
  different sites; a pair is a true duplicate, and not a negative, when the
  5-word-shingle Jaccard of its neutral main texts is >= 0.5;
* the decision's recall / false-match curve for k = 0..8, the share of pages left without
  a fingerprint per site, and the boilerplate segment shares (``bench/boilerplate.py``).

Neutral main text (never our extractor): on the documentation sites the docs' own
content container (:data:`DOC_SITES`); on ``web/`` the annotated main element, i.e. the
deepest block holding most of the page's hand-annotated ``with`` segments
(``perturb.find_main``).

A crawl signs each page against its host's template, learned from the pages it kept
(``scrapy_simhash.fingerprinting.template``). The harness gives each page the same:
a documentation site's pages are signed in file order, each against the template of
the pages before it (as a crawl of the site; ``--context twopass``: against the
template of the whole site, which takes more of each page's text for template, the
harsher test of the first rule); a web page and every copy are signed against the
template of three sibling pages, the page's own template with other articles in its
main element (as a crawl of its host, or of a mirror, sees it). ``--context none``
signs every page alone (its whole text is its own: only exact copies are dropped).

Pages are given as decoded text, as Scrapy's ``response.text``. ``--quick`` runs on a
seeded sample in a few minutes (bars are indicative there); the full run writes its output
to ``bench/results/quality.txt``.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import random
import re
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

import numpy as np
from w3lib.encoding import html_to_unicode


from evaluation import perturb as P
from evaluation.corpus import (
    ABSENT_REASON,
    SHARED,
    WEB_SOURCE,
    corpus_dir,
    site_dir,
    site_pages,
    web_pages,
)

# The modules, not the functions of the same names that ``scrapy_simhash`` re-exports.
F = importlib.import_module("scrapy_simhash.fingerprinting.hashing")
SG = importlib.import_module("scrapy_simhash.fingerprinting.signature")
T = importlib.import_module("scrapy_simhash.fingerprinting.template")

RESULTS = Path(__file__).resolve().parent / "results" / "quality.txt"
KS = range(9)
NO_FP = 99  # distance recorded when a side has no fingerprint: never within any k
MIN_MAIN_WORDS = 50
MAX_TEMPLATE_PROSE = 100  # a template page's prose outside its main content, in words
DUP_JACCARD = 0.5
SHINGLE = 5
#: Each documentation site's own content container (XPaths tried in order).
DOC_SITES = {
    "python-3.11": ("//div[@role='main']",),
    "django-3.2": ("//div[@id='yui-main']",),
    "docs2/cmake-3.25": ("//div[@role='main']",),
    "docs2/libstdc++-12": ("//div[@id='doc-content']", "//body/div[not(contains(@class, 'nav'))]"),
    "docs2/postgresql-15": ("//body/div[not(contains(@class, 'nav'))]",),
    "docs2/git-2.39": ("//div[@id='content']",),
    "docs3/qt-5.15": ("//div[@class='content mainContent']",),
    "docs3/eigen-3.4": ("//div[@class='contents']",),
    "docs3/commons-lang3-3.12": ("//main",),
}
#: The attribute that marks a page's main element, so that siblings and copies find it.
MARK = "data-quality-main"
#: Sibling pages a web page's (or a copy's) host template is learned from.
SIBLINGS = 3
#: Pages of each documentation site given perturbed copies (full run, quick run).
DOC_POSITIVES = (60, 12)

SINGLE = ("ads", "timestamps", "navigation", "sidebar")
BARS = {  # positive kind -> recall bar at the default k (web and docs pages separately): issue 23
    "ads": 0.97,
    "timestamps": 0.97,
    "navigation": 0.97,
    "sidebar": 0.97,
    "combo-2": 0.95,
    "combo-4": 0.95,
    "edits-1%": 0.89,
    "template": 0.85,
}
MAX_SAME_SITE = 0  # issue 23: no pair of distinct pages of a site joined
MAX_NO_FP = 0.05
BOILERPLATE = (0.903, 0.884)  # with kept, without removed: issue 12's floor (today's figures)

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


def content_container(root, xpaths: Sequence[str]) -> list:
    """The elements of a page's own content: the first of ``xpaths`` that matches, else the
    body. The neutral main text that decides whether two pages are distinct."""
    for xpath in xpaths:
        found = root.xpath(xpath)
        if found:
            return found
    return [P.body_of(root)]


def load_docs(site: str, sample: int | None, seed: int) -> list[Page]:
    folder = site_dir(site)
    paths = site_pages(site)
    if sample:
        paths = sorted(random.Random(seed).sample(paths, min(sample, len(paths))))
    pages = []
    for path in paths:
        text = decode(path.read_bytes())
        root = P.parse(text)
        found = content_container(root, DOC_SITES[site])
        main_text = " ".join(el.text_content() for el in found)
        page = Page(
            f"{site}/{path.relative_to(folder)}", site, text, len(main_text.split()), shingles(main_text)
        )
        page.letter_shingles = shingles(main_text, digits=False)
        if len(found) == 1:  # the perturbations need one main element
            page.main_path = root.getroottree().getpath(found[0])
        page.teasers = _teasers(root)
        pages.append(page)
    return pages


# --------------------------------------------------------------------------- fingerprints


def trafilatura_text(text: str) -> str:
    """The page reduced to trafilatura's main text, as paragraphs (the ``--extractor`` reference)."""
    import trafilatura

    main = trafilatura.extract(text, include_comments=False) or ""
    paragraphs = "".join(f"<p>{escape(line)}</p>" for line in main.splitlines())
    return f"<html><body>{paragraphs}</body></html>"


class Signer:
    """Calls the public ``signature()``; an exception counts as no signature and is reported.

    With ``extractor="trafilatura"`` the page is first reduced to trafilatura's main
    text: a reference showing what a strong (10x slower) extractor reaches with
    our features and decision. ``context``: how a page's site template is learned
    (module docstring).
    """

    def __init__(self, min_features: int | None, extractor: str = "ours",
                 context: str = "stream") -> None:
        self.options = {} if min_features is None else {"min_features": min_features}
        self.prepare = trafilatura_text if extractor == "trafilatura" else None
        self.context = context
        self.errors: list[str] = []
        self.calls = 0
        self.seconds = 0.0
        self.articles: list = []  # main elements siblings are made of

    def analyse(self, page, name: str, template=None):
        self.calls += 1
        start = time.perf_counter()
        try:
            if self.prepare is not None:
                page = self.prepare(page if isinstance(page, str) else P.serialize(page))
            return SG.analyse(page, template=template, **self.options)
        except Exception as exc:  # noqa: BLE001 - the harness keeps going and reports it
            self.errors.append(f"{name}: {type(exc).__name__}: {exc}")
            return None
        finally:
            self.seconds += time.perf_counter() - start

    def __call__(self, text: str, name: str, template=None):
        found = self.analyse(text, name, template)
        return None if found is None else found.signature

    def sibling_template(self, text: str, name: str):
        """The template a crawl of the page's host learns: the page's tree with
        other articles in its marked main element, :data:`SIBLINGS` times."""
        template = T.SiteTemplate()
        if self.context == "none":
            return template
        root = P.parse(text)
        found = root.xpath(f"//*[@{MARK}]")
        if not found or not self.articles:
            return template
        path = root.getroottree().getpath(found[0])
        rng = random.Random(P.page_seed("siblings", name))
        for article in rng.sample(self.articles, min(SIBLINGS, len(self.articles))):
            sibling = copy.deepcopy(root)
            target = sibling.getroottree().xpath(path)[0]
            content = copy.deepcopy(article)
            content.tail = target.tail
            if target.getparent() is None:
                continue
            target.getparent().replace(target, content)
            seen = self.analyse(sibling, f"{name} [sibling]")
            if seen is not None:
                template.learn(seen.evidence.block_hashes)
        return template

    def with_siblings(self, text: str, name: str):
        return self(text, name, self.sibling_template(text, name))

    def site(self, pages: Sequence[Page]) -> Signatures:
        """A documentation site's pages, each against the site's template (module docstring)."""
        template = T.SiteTemplate()
        if self.context == "twopass":
            for page in pages:
                found = self.analyse(page.text, page.name)
                if found is not None:
                    template.learn(found.evidence.block_hashes)
            return Signatures([self(page.text, page.name, template) for page in pages])
        sigs = []
        for page in pages:
            found = self.analyse(page.text, page.name, template)
            sigs.append(None if found is None else found.signature)
            if found is not None and self.context == "stream":
                template.learn(found.evidence.block_hashes)
        return Signatures(sigs)

    def many(self, pages: Sequence[Page]) -> Signatures:
        """Web pages' signatures, in order, each against its siblings' template."""
        return Signatures([self.with_siblings(page.text, page.name) for page in pages])


def marked(page: Page) -> str:
    """The page's HTML with its main element marked (:data:`MARK`)."""
    if not page.main_path:
        return page.text
    root = P.parse(page.text)
    found = root.getroottree().xpath(page.main_path)
    if found:
        found[0].set(MARK, "1")
    return P.serialize(root)


def articles(pages: Sequence[Page], chosen: Sequence[int]) -> list:
    """The main elements of the chosen pages (sibling contents)."""
    out = []
    for i in chosen:
        page = pages[i]
        if page.main_path:
            found = P.parse(page.text).getroottree().xpath(page.main_path)
            if found:
                out.append(found[0])
    return out


class Signatures:
    """Signatures of a list of pages: ``uint64`` fingerprints, a has-signature mask, sketches."""

    def __init__(self, sigs: list) -> None:
        self.sigs = sigs
        self.fps = np.array([s.fingerprint if s else 0 for s in sigs], dtype=np.uint64)
        self.ok = np.array([s is not None for s in sigs], dtype=bool)

    @staticmethod
    def concat(parts: Sequence[Signatures]) -> Signatures:
        return Signatures([s for part in parts for s in part.sigs])


def distances(a, b) -> tuple[int, int]:
    """(fingerprint distance, decision distance) of two signatures: the decision
    distance is the fingerprint distance when the sketches confirm the pair, else
    :data:`NO_FP` (never a match at any k); both NO_FP when a side has no signature."""
    if a is None or b is None:
        return NO_FP, NO_FP
    d = F.hamming(a.fingerprint, b.fingerprint)
    return d, d if SG.confirms(a.sketch, b.sketch) else NO_FP


# --------------------------------------------------------------------------- positives


@dataclass
class Positives:
    """Distances original -> perturbed copy per kind: the decision's and the fingerprint's."""

    label: str
    dist: dict[str, np.ndarray]  # decision distance (NO_FP when not confirmed)
    raw: dict[str, np.ndarray]  # fingerprint distance
    who: dict[str, list[str]]
    why: dict[str, list[str]]  # why the sketches refuse the pair ("" when they confirm it)

    @staticmethod
    def merge(label: str, parts: Sequence[Positives]) -> Positives:
        kinds = parts[0].dist
        return Positives(
            label,
            {k: np.concatenate([p.dist[k] for p in parts]) for k in kinds},
            {k: np.concatenate([p.raw[k] for p in parts]) for k in kinds},
            {k: [w for p in parts for w in p.who[k]] for k in kinds},
            {k: [w for p in parts for w in p.why[k]] for k in kinds},
        )


def copies(
    i: int, pages: list[Page], eligible: list[int], hosts: list[Page], seed: int
) -> Iterator[tuple[str, str, str]]:
    """``(kind, html, who)`` of each copy of the eligible page ``pages[i]`` the positives
    compare with it, in order: itself (marked), each perturbation of
    :data:`SINGLE`, two and four of them, ~1% of its words edited, and its
    content in another page's template (one of ``hosts``)."""
    kinds: dict[str, Callable[[random.Random], list[str]]] = {
        **{k: (lambda rng, k=k: [k]) for k in SINGLE},
        "combo-2": lambda rng: sorted(rng.sample(SINGLE, 2), key=SINGLE.index),
        "combo-4": lambda rng: list(SINGLE),
        "edits-1%": lambda rng: ["edits"],
    }
    page = pages[i]
    text = marked(page)
    yield "identity", text, page.name
    others = [j for j in eligible if j != i]
    rng = random.Random(P.page_seed(seed, page.name))
    teasers = pages[rng.choice(others)].teasers if others else []
    for kind, choose in kinds.items():
        html, _counts = P.perturb(
            text,
            choose(rng),
            P.page_seed(seed, page.name, kind),
            main_path=page.main_path,
            teasers=teasers or P.DEFAULT_TEASERS,
        )
        yield kind, html, page.name
    candidates = [h for h in hosts if h.name != page.name]
    if candidates:
        host = rng.choice(candidates)
        article, template = P.parse(text), P.parse(host.text)
        a_main = article.getroottree().xpath(page.main_path)[0]
        t_main = template.getroottree().xpath(host.main_path)[0]
        html = P.serialize(P.transplant(article, a_main, template, t_main))
        yield "template", html, f"{page.name} in the template of {host.name}"


#: The kinds of :func:`copies`, in order.
KINDS = ("identity", *SINGLE, "combo-2", "combo-4", "edits-1%", "template")


def positives(
    label: str,
    pages: list[Page],
    eligible: list[int],
    sigs: Signatures,
    signer: Signer,
    hosts: list[Page],
    seed: int,
) -> Positives:
    """Each eligible page against its perturbed copies; templates come from ``hosts``."""
    dist: dict[str, list[int]] = {k: [] for k in KINDS}
    raw: dict[str, list[int]] = {k: [] for k in KINDS}
    who: dict[str, list[str]] = {k: [] for k in KINDS}
    why: dict[str, list[str]] = {k: [] for k in KINDS}
    for i in eligible:
        original = sigs.sigs[i]
        for kind, html, name in copies(i, pages, eligible, hosts, seed):
            copy = signer.with_siblings(html, f"{pages[i].name} [{kind}]")
            d, decided = distances(original, copy)
            raw[kind].append(d)
            dist[kind].append(decided)
            who[kind].append(name)
            if original is None or copy is None:
                why[kind].append("a page has no fingerprint")
            else:
                why[kind].append("" if decided != NO_FP else refusal(original.sketch, copy.sketch))
    as_array = lambda d: {k: np.array(v, dtype=np.int64) for k, v in d.items()}  # noqa: E731
    return Positives(label, as_array(dist), as_array(raw), who, why)


def refusal(a: bytes, b: bytes) -> str:
    """Why the sketches ``a`` and ``b`` do not confirm a pair: the
    confirmation's reason, a short own text told apart from one mostly links
    or long blocks other pages repeat (the same reason there)."""
    found = SG.confirmation(a, b)
    if not found.reason.startswith(f"fewer than {SG.SMALL_OWN} own words"):
        return found.reason
    if min(found.words) < SG.SMALL_OWN:
        return f"a page has fewer than {SG.SMALL_OWN} own words: only an exact copy is dropped"
    return (f"both have {SG.SMALL_OWN} own words or more, but one is mostly link text or long "
            f"blocks other pages repeat (weighing {SG.LONG_BLOCK} at most): only an exact copy")


def eligible_pages(pages: list[Page]) -> list[int]:
    """Pages with a main element and enough main text to be perturbed."""
    return [i for i, p in enumerate(pages) if p.main_path and p.words >= MIN_MAIN_WORDS]


# --------------------------------------------------------------------------- negatives


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


@dataclass
class PairSet:
    """Pairs of distinct pages with fingerprints within distance 8, with their
    decision distance and main-text Jaccard."""

    label: str
    total: int  # pairs with both signatures
    i: np.ndarray
    j: np.ndarray
    d: np.ndarray  # fingerprint distance
    dd: np.ndarray  # decision distance (NO_FP when the sketches do not confirm)
    jac: np.ndarray
    jac_letters: np.ndarray  # the same without words holding digits (dates, version numbers)

    def within(self, k: int, duplicates: bool = False, raw: bool = False) -> np.ndarray:
        """Pairs the decision (or, ``raw``, the fingerprint alone) matches at ``k``:
        the non-duplicates, or the true ``duplicates``."""
        near = (self.d if raw else self.dd) <= k
        return near & (self.jac >= DUP_JACCARD) if duplicates else near & (self.jac < DUP_JACCARD)


def all_pairs(
    pages: Sequence[Page], sigs: Signatures, label: str, cross_only: bool = False
) -> PairSet:
    """Every pair i < j of signed pages (vectorised XOR/popcount on the upper triangle)."""
    fps, valid = sigs.fps, sigs.ok
    idx = np.flatnonzero(valid)
    # Site codes, not names: a web page's site is its URL, and comparing long
    # strings over a block of 512 x all pairs once took 22 GB.
    sites = np.unique([pages[i].site for i in idx], return_inverse=True)[1]
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
    dd = np.array(
        [distances(sigs.sigs[a], sigs.sigs[b])[1] for a, b in zip(i, j)], dtype=np.int64
    )
    jac = np.array(
        [jaccard(pages[a].shingles, pages[b].shingles) for a, b in zip(i, j)], dtype=np.float64
    )
    letters = np.array(
        [jaccard(pages[a].letter_shingles, pages[b].letter_shingles) for a, b in zip(i, j)],
        dtype=np.float64,
    )
    return PairSet(label, total, i, j, d, dd, jac, letters)


def worst(pairs: PairSet, pages: Sequence[Page], k: int, limit: int, report: Report) -> None:
    bad = np.flatnonzero(pairs.within(k))
    order = bad[np.lexsort((pairs.jac[bad], pairs.d[bad]))][:limit]
    for n in order:
        a, b = pages[pairs.i[n]].name, pages[pairs.j[n]].name
        report(
            f"    d={pairs.d[n]}  J={pairs.jac[n]:.2f} (letters only {pairs.jac_letters[n]:.2f})  {a}  <->  {b}"
        )
    if len(bad) > limit:
        report(f"    ... and {len(bad) - limit} more")


# --------------------------------------------------------------------------- main


def abstentions(
    web: list[Page], web_sigs: Signatures, docs: dict[str, list[Page]],
    docs_sigs: dict[str, Signatures], report: Report,
) -> None:
    """Pages left without a fingerprint among those with enough neutral main text, per site."""
    for site, pages, sigs in [("web", web, web_sigs)] + [(s, docs[s], docs_sigs[s]) for s in docs]:
        longs = np.array([p.words >= MIN_MAIN_WORDS for p in pages], dtype=bool)
        missing = int((~sigs.ok[longs]).sum())
        share = missing / max(int(longs.sum()), 1)
        report(
            f"no fingerprint: {site:<20} {missing:>4} of {int(longs.sum()):>4} pages with "
            f">= {MIN_MAIN_WORDS} main-text words ({share:.1%}); all pages {int((~sigs.ok).sum())} of {len(pages)}"
        )
        report.bar(
            share <= MAX_NO_FP,
            f"no fingerprint among {site} pages with >= {MIN_MAIN_WORDS} main-text words: {share:.1%} <= 5%",
        )


def _short(site: str) -> str:
    return site.rpartition("/")[2].split("-")[0][:8]


def curve(
    pos: Sequence[Positives], same: dict[str, PairSet], cross: PairSet, report: Report
) -> None:
    """The decision's recall / false-match / precision table for k = 0..8 (and the fingerprint's)."""
    report()
    report(
        "Recall of positive pairs (original vs perturbed copy) and false matches (negative pairs), per k,\n"
        "for the drop decision (is_duplicate: fingerprints within k AND sketches confirming). A side without\n"
        "a fingerprint is never a match. A negative is a pair of distinct pages with main-text\n"
        f"{SHINGLE}-word-shingle Jaccard < {DUP_JACCARD}. precision = TP / (TP + FP): TP = positive pairs\n"
        "(all kinds but identity, web and docs) within k, FP = negative pairs within k (same-site docs + cross-site)."
    )
    for group in pos:
        kinds = [k for k in group.dist if len(group.dist[k])]
        report()
        report(f"{group.label}: recall per positive kind; 'all' = over every positive pair of the group")
        report(f"{'k':>2} " + " ".join(f"{k[:10]:>10}" for k in kinds) + f" {'all':>6}")
        for k in KS:
            recalls = [float((group.dist[kind] <= k).mean()) for kind in kinds]
            tp_pairs = np.concatenate([group.dist[kind] for kind in kinds if kind != "identity"])
            report(
                f"{k:>2} " + " ".join(f"{r:>10.3f}" for r in recalls)
                + f" {float((tp_pairs <= k).mean()):>6.3f}"
            )
        report(
            f"  {len(group.dist['ads'])} pages x {len(kinds) - 1} kinds; recall of the fingerprint alone at k=3: "
            + ", ".join(f"{kind} {float((group.raw[kind] <= 3).mean()):.3f}" for kind in kinds)
        )
    report()
    report(
        "False matches per k: 'dec' = the decision, 'fp' = the fingerprint alone (what k=3 without\n"
        "confirmation would drop); precision of the decision over every positive and negative pair."
    )
    report(
        f"{'k':>2} "
        + " ".join(f"{_short(s) + ' dec/fp':>17}" for s in same)
        + f" {'cross dec/fp':>14} {'precision':>9}"
    )
    tp_all = np.concatenate(
        [g.dist[kind] for g in pos for kind in g.dist if kind != "identity"]
    )
    for k in KS:
        fps = [int(same[s].within(k).sum()) for s in same]
        raws = [int(same[s].within(k, raw=True).sum()) for s in same]
        fpx, rawx = int(cross.within(k).sum()), int(cross.within(k, raw=True).sum())
        tp = int((tp_all <= k).sum())
        precision = tp / (tp + sum(fps) + fpx) if tp + sum(fps) + fpx else 1.0
        report(
            f"{k:>2} "
            + " ".join(f"{f'{a}/{b}':>17}" for a, b in zip(fps, raws))
            + f" {f'{fpx}/{rawx}':>14} {precision:>9.4f}"
        )
    report(
        "pairs examined: "
        + ", ".join(f"{s} {same[s].total}" for s in same)
        + f", cross-site {cross.total}"
    )


def negatives_and_bars(
    args: argparse.Namespace,
    pos: Sequence[Positives],
    same: dict[str, PairSet],
    cross: PairSet,
    docs: dict[str, list[Page]],
    everything: list[Page],
    report: Report,
) -> None:
    """Missed positives and false matches at the bar's k, and the bars they decide."""
    k = args.k
    for group in pos:
        report()
        report(
            f"{group.label}: positive pairs missed at k={k}, the farthest {args.show} per kind "
            "(d=99: a side has no fingerprint, or the sketches do not confirm; fp = fingerprint distance):"
        )
        for kind in group.dist:
            missed = np.flatnonzero(group.dist[kind] > k)
            order = missed[np.argsort(-group.raw[kind][missed], kind="stable")][: args.show]
            for n in order:
                report(
                    f"  {kind:<11} d={group.dist[kind][n]:>2} fp={group.raw[kind][n]:>2}  {group.who[kind][n]}"
                )
        misses(group, k, report)
    report()
    for s in same:
        bad = int(same[s].within(k).sum())
        raw = int(same[s].within(k, raw=True).sum())
        dup = int(same[s].within(k, duplicates=True).sum())
        numbers = int((same[s].within(k) & (same[s].jac_letters >= DUP_JACCARD)).sum())
        report(
            f"{s}: {bad} non-duplicate pairs dropped at k={k} (fingerprint alone: {raw}; of {same[s].total} pairs), "
            f"{numbers} of them differ mostly in numbers (letters-only Jaccard >= {DUP_JACCARD}); "
            f"true duplicates found: {dup}"
        )
        worst(same[s], docs[s], k, 10, report)
        report.bar(
            bad <= MAX_SAME_SITE,
            f"{s}: non-duplicate pairs dropped at k={k}: {bad} <= {MAX_SAME_SITE}",
        )
    bad = int(cross.within(k).sum())
    dup = int(cross.within(k, duplicates=True).sum())
    report(
        f"cross-site: {bad} non-duplicate pairs dropped at k={k} (fingerprint alone: "
        f"{int(cross.within(k, raw=True).sum())}; of {cross.total}); true duplicates found: {dup}"
    )
    worst(cross, everything, k, 10, report)
    report.bar(bad == 0, f"cross-site: non-duplicate pairs dropped at k={k}: {bad} == 0")
    for group in pos:
        for kind, minimum in BARS.items():
            if kind in group.dist and len(group.dist[kind]):
                r = float((group.dist[kind] <= k).mean())
                report.bar(
                    r >= minimum, f"{group.label} positives {kind}: recall at k={k} {r:.3f} >= {minimum:.2f}"
                )


def misses(group: Positives, k: int, report: Report) -> None:
    """Why the copies missed at ``k`` were missed (every kind but identity), the
    commonest reason first: the confirmation's own words
    (:func:`scrapy_simhash.fingerprinting.signature.confirmation`), or the
    fingerprints more than ``k`` bits apart."""
    counts: dict[str, Counter] = {}
    for kind in group.dist:
        if kind == "identity":
            continue
        for n in np.flatnonzero(group.dist[kind] > k).tolist():
            reason = group.why[kind][n] or f"fingerprints more than k={k} bits apart"
            counts.setdefault(reason, Counter())[kind] += 1
    total = sum(sum(c.values()) for c in counts.values())
    report(f"  why the {total} copies missed at k={k} (every kind but identity) were missed:")
    for reason, by_kind in sorted(counts.items(), key=lambda item: -sum(item[1].values())):
        report(f"  {sum(by_kind.values()):>5}  {reason}")
        report("         " + ", ".join(f"{kind} {n}" for kind, n in by_kind.items()))


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
    kept, removed = BOILERPLATE
    report.bar(
        round(s["with_kept"], 3) >= kept,
        f"boilerplate: with segments kept {s['with_kept']:.3f} >= {kept}",
    )
    report.bar(
        round(s["without_removed"], 3) >= removed,
        f"boilerplate: without segments removed {s['without_removed']:.3f} >= {removed}",
    )


def run(args: argparse.Namespace, report: Report) -> int:
    started = time.perf_counter()
    web_sample, docs_sample = (60, 120) if args.quick else (None, None)
    signer = Signer(args.min_features, args.extractor, args.context)
    report(
        f"scrapy_simhash quality harness  FINGERPRINT_VERSION={F.FINGERPRINT_VERSION}  "
        f"min_features={args.min_features if args.min_features is not None else F.DEFAULT_MIN_FEATURES}  "
        f"k={args.k}  sketch: {SG.SKETCH_BINS} bytes (own text {SG.OWN_BINS} and main text "
        f"{SG.MAIN_BINS} bins of word {SG.SHINGLE}-shingles), confirm >= {SG.CONFIRM}/64, "
        f"path 3: guard {SG.GUARD}/64, main {SG.NEAR}/64  context={args.context}  seed={args.seed}  mode={'quick (sample: bars indicative)' if args.quick else 'full'}"
        + ("" if args.extractor == "ours" else f"  extractor={args.extractor} (reference)")
    )
    t = time.perf_counter()
    web = load_web(web_sample, args.seed)
    docs = {site: load_docs(site, docs_sample, args.seed) for site in args.sites}
    report(
        f"loaded {len(web)} web pages, "
        + ", ".join(f"{len(v)} {k}" for k, v in docs.items())
        + f" ({time.perf_counter() - t:.1f}s)"
    )

    t = time.perf_counter()
    web_eligible = eligible_pages(web)
    signer.articles = articles(web, web_eligible)
    web_sigs = Signatures([signer.with_siblings(marked(page), page.name) for page in web])
    docs_sigs = {site: signer.site(pages) for site, pages in docs.items()}
    report(f"signed originals ({time.perf_counter() - t:.1f}s)")

    report()
    abstentions(web, web_sigs, docs, docs_sigs, report)

    # -- positives: web pages, and a sample of each documentation site's pages
    report()
    t = time.perf_counter()
    hosts = [web[i] for i in web_eligible if web[i].outside_prose <= MAX_TEMPLATE_PROSE]
    web_pos = positives("web", web, web_eligible, web_sigs, signer, hosts, args.seed)
    report(
        f"positives: {len(web_eligible)} of {len(web)} web pages have >= {MIN_MAIN_WORDS} main-text words "
        "(annotated main element)"
    )
    report(
        f"  template hosts: {len(hosts)} web pages with <= {MAX_TEMPLATE_PROSE} words of prose paragraphs "
        "outside their main content (a template, not a second article or a thread)"
    )
    per_site = DOC_POSITIVES[1] if args.quick else DOC_POSITIVES[0]
    doc_parts = []
    for site, pages in docs.items():
        eligible = eligible_pages(pages)
        chosen = sorted(random.Random(P.page_seed(args.seed, site)).sample(
            eligible, min(per_site, len(eligible))
        ))
        signer.articles = articles(pages, chosen)
        doc_parts.append(positives(site, pages, chosen, docs_sigs[site], signer, hosts, args.seed))
    docs_pos = Positives.merge("docs", doc_parts)
    report(
        f"  docs: {per_site} pages of each documentation site with >= {MIN_MAIN_WORDS} words in its "
        f"content container ({len(docs_pos.dist['ads'])} pages), templates from the web hosts"
    )
    report(f"  ({time.perf_counter() - t:.1f}s)")
    pos = [web_pos, docs_pos]

    # -- negatives
    t = time.perf_counter()
    same = {site: all_pairs(docs[site], docs_sigs[site], site) for site in docs}
    everything = web + [p for site in docs for p in docs[site]]
    all_sigs = Signatures.concat([web_sigs, *(docs_sigs[s] for s in docs)])
    cross = all_pairs(everything, all_sigs, "cross-site", cross_only=True)
    report(f"negatives: all pairs computed ({time.perf_counter() - t:.1f}s)")

    curve(pos, same, cross, report)

    negatives_and_bars(args, pos, same, cross, docs, everything, report)

    report()
    boilerplate(report, 40 if args.quick else None)

    if signer.errors:
        report()
        report(
            f"signature() raised on {len(signer.errors)} inputs (counted as no signature), first ones:"
        )
        for line in signer.errors[:5]:
            report(f"  {line}")
        report.bar(False, f"signature() never raises on page content ({len(signer.errors)} raised)")

    report()
    report(
        f"{signer.calls} signatures, {1000 * signer.seconds / max(signer.calls, 1):.1f} ms each on average "
        f"(wall clock, from text); total {time.perf_counter() - started:.0f}s"
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
    signer = Signer(args.min_features, args.extractor, args.context)
    report(f"documentation sites only (no web/ pages: positives and boilerplate skipped): {', '.join(sites)}")
    docs = {site: load_docs(site, docs_sample, args.seed) for site in sites}
    docs_sigs = {site: signer.site(pages) for site, pages in docs.items()}
    same = {site: all_pairs(docs[site], docs_sigs[site], site) for site in sites}
    everything = [p for site in sites for p in docs[site]]
    all_sigs = Signatures.concat([docs_sigs[s] for s in sites])
    cross = all_pairs(everything, all_sigs, "cross-site", cross_only=True)
    report("false matches of the drop decision per k (dec), and of the fingerprint alone (fp)")
    report(f"{'k':>2} " + " ".join(f"{_short(s) + ' dec/fp':>17}" for s in sites)
           + f" {'cross dec/fp':>14}")
    for k in KS:
        report(
            f"{k:>2} "
            + " ".join(
                f"{f'{int(same[s].within(k).sum())}/{int(same[s].within(k, raw=True).sum())}':>17}"
                for s in sites
            )
            + f" {f'{int(cross.within(k).sum())}/{int(cross.within(k, raw=True).sum())}':>14}"
        )
    for s in sites:
        bad = int(same[s].within(args.k).sum())
        report(f"{s}: {bad} non-duplicate pairs dropped at k={args.k} (of {same[s].total} pairs)")
        worst(same[s], docs[s], args.k, 10, report)
        report.bar(bad <= MAX_SAME_SITE, f"{s}: non-duplicate pairs dropped at k={args.k}: {bad} <= {MAX_SAME_SITE}")
    bad = int(cross.within(args.k).sum())
    report.bar(bad == 0, f"cross-site: non-duplicate pairs dropped at k={args.k}: {bad} == 0")
    for ok, text in report.bars:
        report(f"{'PASS' if ok else 'FAIL'}  {text}")
    failed = sum(not ok for ok, _ in report.bars)
    report(f"{len(report.bars) - failed} of {len(report.bars)} bars pass (documentation sites only)")
    return 1 if failed and args.strict else 0


def select_sites(names: Sequence[str] | None) -> list[str]:
    """The sites ``--sites`` names, in :data:`DOC_SITES` order; ``ValueError`` naming an
    unknown one."""
    if not names or "all" in names:
        return list(DOC_SITES)
    chosen = set()
    for name in names:
        match = [site for site in DOC_SITES if name in (site, site.rpartition("/")[2])]
        if not match:
            known = ", ".join(DOC_SITES)
            raise ValueError(f"--sites: unknown site {name!r} (known: {known}, all)")
        chosen.update(match)
    return [site for site in DOC_SITES if site in chosen]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="seeded sample, a few minutes; no results file"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="perturbation and sampling seed (default 0)"
    )
    parser.add_argument(
        "--min-features", type=int, default=None, help="override fingerprint()'s min_features"
    )
    parser.add_argument(
        "--k",
        type=int,
        default=SG.DEFAULT_MAX_DISTANCE,
        help=f"candidate distance the bars are checked at (default {SG.DEFAULT_MAX_DISTANCE})",
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
    parser.add_argument(
        "--context",
        choices=("stream", "twopass", "none"),
        default="stream",
        help="how each page's site template is learned (module docstring; default stream)",
    )
    parser.add_argument(
        "--sites", nargs="+", metavar="SITE",
        help="documentation sites measured: " + ", ".join(DOC_SITES)
        + " (a docs2/ or docs3/ site also by its short name, qt-5.15); default: all",
    )
    parser.add_argument("--no-web", action="store_true",
                        help="documentation sites' negatives only (no web pages, no positives)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a bar fails")
    parser.add_argument(
        "--output",
        type=Path,
        default=RESULTS,
        help=f"results file (default {RESULTS}, written by a full run; --no-web writes "
        "only to a file named here)",
    )
    args = parser.parse_args(argv)
    try:
        args.sites = select_sites(args.sites)
    except ValueError as exc:
        parser.error(str(exc))
    if corpus_dir() is None or args.no_web:
        sites = [site for site in args.sites if site_dir(site) is not None]
        if not sites:
            print(f"bench/quality.py needs the evaluation corpus: {ABSENT_REASON}; "
                  "make corpus-debian builds its documentation sites", file=sys.stderr)
            return 2
        if corpus_dir() is None:
            print(f"{ABSENT_REASON}: {WEB_SOURCE}; measuring what public sources provide "
                  "(results not written)", file=sys.stderr)
        report = Report()
        status = run_public(args, report, sites)
        if args.output != RESULTS:  # the default file is the full run's
            _write(report, args.output)
        return status
    report = Report()
    status = run(args, report)
    if not args.quick and (args.extractor == "ours" or args.output != RESULTS):
        _write(report, args.output)
    return status


def _write(report: Report, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(report.lines) + "\n", encoding="utf-8")
    print(f"written to {path}")


if __name__ == "__main__":
    sys.exit(main())
