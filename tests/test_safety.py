"""The first rule, as a property: no pair of distinct pages is joined, whatever
text the extractor picks as a page's main text.

The extractor is forced to return the wrong text -- the site-wide footer, the
navigation, a random block of the page -- on a generated API-reference site
(short member tables, tiny pages that differ in one operand, "no usage" stubs,
all under one long legal footer: the shapes that failed on unseen sites) and on
docs-dev3's Qt reference when the corpus is there. Pages are signed as a crawl
signs them (each against the template of the pages kept before it). The
decision may miss copies; it must never join two distinct pages (5-word-shingle
Jaccard of their content < 0.5). The exact mirror copies are still found, so
the property is not met by dropping nothing.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.corpus import ABSENT_REASON, corpus_dir, site_pages
from evaluation.crawl_order import crawl_order
from evaluation.wrong_text import WRONG_TEXTS
from scrapy_simhash.backends.memory import MemoryBackend
from scrapy_simhash.fingerprinting.extract import MainText, PageText, parse_html
from scrapy_simhash.fingerprinting.hashing import hamming_many
from scrapy_simhash.fingerprinting.signature import (
    DEFAULT_MAX_DISTANCE,
    SKETCH_BINS,
    Signature,
    confirmation,
    confirms_many,
    is_duplicate,
    sign,
)
from scrapy_simhash.fingerprinting.template import SiteTemplate

FOOTER = (
    "Copyright 2024 The Example Company Ltd and its subsidiaries. Documentation "
    "contributions included herein are the copyrights of their respective owners. "
    "The documentation provided herein is licensed under the terms of the Free "
    "Documentation License version 1.3 as published by the Free Software Foundation. "
    "All other trademarks are property of their respective owners and are used here "
    "for identification purposes only, without any endorsement being implied."
)
MEMBERS = (
    "append clear contains count data detach empty erase fill first front insert "
    "isEmpty last length mid prepend push_back remove replace reserve resize size "
    "squeeze startsWith swap toLower toUpper trimmed truncate value"
).split()
NAV = ["Home", "Modules", "Classes", "Functions", "Examples", "Search"]
WORD = re.compile(r"\w+")


def _page(title: str, content: str) -> str:
    nav = "".join(f'<li><a href="/{n.lower()}.html">{n}</a></li>' for n in NAV)
    return (
        f"<html><head><title>{title} | Example 5.15</title></head><body>"
        f'<div class="header"><ul class="nav">{nav}</ul></div>'
        f'<div class="content">{content}</div>'
        f'<div class="footer"><p>{FOOTER}</p></div></body></html>'
    )


def api_site(n: int = 90, seed: int = 7) -> dict[str, str]:
    """A generated reference: member lists, tiny instruction pages, usage stubs."""
    rng = random.Random(seed)
    pages = {}
    for i in range(n):
        kind = i % 3
        if kind == 0:
            members = sorted(rng.sample(MEMBERS, rng.randint(6, 20)))
            items = "".join(f'<li><a href="#{m}">{m}</a>(int)</li>' for m in members)
            pages[f"/class{i}-members.html"] = _page(
                f"List of All Members for QClass{i}",
                f"<h1>List of All Members for QClass{i}</h1><ul>{items}</ul>",
            )
        elif kind == 1:
            pages[f"/insn{i}.html"] = _page(
                f"ADD r{i % 7}",
                f"<h1>ADD r{i % 7}, #{i}</h1><p>Adds {i} to register r{i % 7} and sets "
                "the flags.</p>",
            )
        else:
            pages[f"/class-use/Class{i}.html"] = _page(
                f"Uses of Class org.example.Class{i}",
                f"<h1>Uses of Class org.example.Class{i}</h1><p>No usage of "
                f"org.example.Class{i}</p>",
            )
    for path in list(pages)[::9]:  # exact mirror copies
        pages["/mirror" + path] = pages[path]
    return pages


def _shingles(text: str) -> frozenset[str]:
    words = WORD.findall(text.lower())
    if len(words) < 5:
        return frozenset([" ".join(words)])
    return frozenset(" ".join(words[i : i + 5]) for i in range(len(words) - 4))


def _content(root, xpath: str) -> frozenset[str]:
    found = root.xpath(xpath)
    return _shingles(" ".join("".join(el.itertext()) for el in found))


def joined_pairs(sigs: list[Signature | None]) -> list[tuple[int, int]]:
    """Every pair i < j the drop decision joins (vectorised over candidates)."""
    idx = [i for i, s in enumerate(sigs) if s is not None]
    fps = np.array([sigs[i].fingerprint for i in idx], dtype=np.uint64)
    sketches = np.frombuffer(b"".join(sigs[i].sketch for i in idx), np.uint8).reshape(
        -1, SKETCH_BINS
    )
    a, b = np.triu_indices(len(idx), k=1)
    near = hamming_many(fps[a], fps[b]) <= DEFAULT_MAX_DISTANCE
    a, b = a[near], b[near]
    ok = confirms_many(sketches[a], sketches[b])
    return [(idx[i], idx[j]) for i, j in zip(a[ok].tolist(), b[ok].tolist())]



def distinct_pairs(joined: list[tuple[int, int]], contents: list[frozenset[str]],
                   names: list) -> list[tuple]:
    """The joined pairs of distinct pages (5-word-shingle Jaccard of their
    content < 0.5), by ``names``."""
    return [
        (names[i], names[j]) for i, j in joined
        if len(contents[i] & contents[j]) < 0.5 * len(contents[i] | contents[j])
    ]

@pytest.mark.parametrize("how", WRONG_TEXTS)
def test_wrong_main_text_joins_no_distinct_pages_on_a_generated_site(how):
    site = api_site()
    paths = list(site)
    htmls = [site[p] for p in paths]
    sigs = crawl_order(htmls, how)
    contents = [_content(parse_html(h), "//div[@class='content']") for h in htmls]
    joined = joined_pairs(sigs)
    assert distinct_pairs(joined, contents, paths) == []
    # the mirror copies are still found, exactly
    copies = {(paths.index(p[len("/mirror"):]), paths.index(p)) for p in paths if p.startswith("/mirror")}
    found = copies & set(joined)
    assert len(found) >= len(copies) - 2, (len(found), len(copies))


@pytest.mark.skipif(corpus_dir() is None, reason=ABSENT_REASON)
@pytest.mark.parametrize("how", WRONG_TEXTS)
def test_wrong_main_text_joins_no_distinct_pages_on_qt(how):
    paths = [p for p in site_pages("docs3/qt-5.15") if "/qtcore/" in str(p)][:250]
    if len(paths) < 50:
        pytest.skip("docs3/qt-5.15 is not in the corpus (docs-dev3.tar.xz)")
    htmls = [p.read_bytes().decode("utf-8", "replace") for p in paths]
    sigs = crawl_order(htmls, how)
    contents = [
        _content(parse_html(h), "//div[@class='content mainContent']") for h in htmls
    ]
    assert distinct_pairs(joined_pairs(sigs), contents, [p.name for p in paths]) == []


@pytest.mark.skipif(corpus_dir() is None, reason=ABSENT_REASON)
def test_generated_pages_of_a_folder_crawled_alone_stay_apart():
    """commons-lang3's generated functional interfaces (``FailableIntPredicate``
    and ``FailableLongPredicate``: the same sentences, another type), signed as
    a crawl that starts in their folder signs them: their main texts are
    trusted and agree, their fingerprints 2 bits apart, their own texts on 22
    of 48 bins (``bench.sketch_pairs``). With only the own texts' guard (20 of
    64 bins) beside the main texts' agreement, the decision joined them; path 3
    must refuse them (main texts not nearly the same, own texts not alike)."""
    paths = [p for p in site_pages("docs3/commons-lang3-3.12") if "/org/" in str(p)]
    if len(paths) < 50:
        pytest.skip("docs3/commons-lang3-3.12 is not in the corpus (docs-dev3.tar.xz)")
    htmls = [p.read_bytes().decode("utf-8", "replace") for p in paths]
    sigs = crawl_order(htmls, min_features=1)
    contents = [_content(parse_html(h), "//main") for h in htmls]
    joined = joined_pairs(sigs)
    assert distinct_pairs(joined, contents, [p.name for p in paths]) == []
    assert joined, "no pair of org/ is joined at all: the test no longer tells"


TYPES = "int long bool double wxString wxRect wxDC wxWindow wxSize wxPoint wxBitmap".split()


def member_list_site(families: int = 8, seed: int = 3) -> dict[str, str]:
    """Doxygen's "Member List" pages of a base class and of a class derived from
    it (wxWidgets 3.2's shape): the same members, the same signatures; what tells
    them apart is the table's second column, the class each member is defined in,
    a cell that is one link. And a class page each, so the template is learned."""
    rng = random.Random(seed)
    pages = {}
    for family in range(families):
        base, derived = f"Base{family}", f"Derived{family}"
        members = sorted(rng.sample(MEMBERS, 24))
        overridden = set(rng.sample(members, 18))
        for cls in (base, derived):
            args = random.Random(family)  # the same signatures on both pages
            rows = []
            for member in members:
                owner = derived if cls == derived and member in overridden else base
                params = ", ".join(f"const {args.choice(TYPES)} &{name}"
                                   for name in args.sample("abcdefgh", args.randint(1, 4)))
                rows.append(f'<tr><td><a href="class{owner}.html#{member}">{member}</a>({params})'
                            f'</td><td><a href="class{owner}.html">wx{owner}</a></td>'
                            "<td>virtual</td></tr>")
            pages[f"/class{cls}-members.html"] = _page(
                "Member List",
                f"<h1>wx{cls} Member List</h1><p>This is the complete list of members for "
                f'<a href="class{cls}.html">wx{cls}</a>, including all inherited members.</p>'
                f"<table>{''.join(rows)}</table>",
            )
            words = " ".join(rng.choice(MEMBERS + TYPES) for _ in range(150))
            pages[f"/class{cls}.html"] = _page(
                f"wx{cls} Class Reference", f"<h1>wx{cls} Class Reference</h1><p>{words}</p>"
            )
    return pages


def test_member_lists_that_differ_in_link_cells_only_stay_apart():
    """The extractor's main text is right but partial: the members' signatures
    without the link-only cells naming the class each is defined in. The decision
    must not join two such lists on their main texts (Jaccard 0.40 to 0.46 of
    their content: distinct pages). Version 8 joined 7 such pairs (wxWidgets
    3.2's member lists of ``wxRibbonAUIArtProvider`` and
    ``wxRibbonMSWArtProvider``, held out: one lost in a crawl); since version 9
    the main-text sketch reads the region whole."""
    site = member_list_site()
    paths = list(site)
    htmls = [site[p] for p in paths]
    sigs = crawl_order(htmls)
    contents = [_content(parse_html(h), "//div[@class='content']") for h in htmls]
    assert distinct_pairs(joined_pairs(sigs), contents, paths) == []


# -- the decision itself: one rule, the scalar and vectorised forms agree --------

_sketches = st.binary(min_size=SKETCH_BINS, max_size=SKETCH_BINS)


@st.composite
def sketch_pairs(draw):
    """Pairs that are often close: bins copied, the tail (exact hash, words,
    flags) shared or not."""
    a = bytearray(draw(_sketches))
    b = bytearray(a)
    for i in draw(st.lists(st.integers(0, SKETCH_BINS - 1), max_size=30)):
        b[i] = draw(st.integers(0, 255))
    return bytes(a), bytes(b)


@settings(max_examples=400, deadline=None)
@given(sketch_pairs())
def test_confirms_many_is_confirmation(pair):
    a, b = pair
    x = np.frombuffer(a, np.uint8).reshape(1, -1)
    y = np.frombuffer(b, np.uint8).reshape(1, -1)
    assert bool(confirms_many(x, y)[0]) is confirmation(a, b).confirms
    assert confirmation(a, b).confirms is confirmation(b, a).confirms  # symmetric


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 63), st.integers(0, 3)),
        min_size=1, max_size=60,
    )
)
def test_memory_backend_decides_as_brute_force(pages):
    """query_and_add drops a page exactly when a stored page ``is_duplicate`` of it."""
    bases = [int(x) for x in np.random.default_rng(1).integers(0, 2**63, 6, dtype=np.uint64)]
    texts = ["alpha beta gamma", "delta epsilon", "zeta eta theta iota", "kappa"]
    template = SiteTemplate()
    sketches = {}
    for t, words in enumerate(texts):
        page = PageText(MainText("", [], [words], []), [(words, 0)], True)
        sketches[t] = sign(page, template=template, min_features=1).evidence.sketch
    backend = MemoryBackend(k=DEFAULT_MAX_DISTANCE)
    stored: list[Signature] = []
    for n, (base, bit, text) in enumerate(pages):
        sig = Signature(bases[base] ^ (1 << bit), sketches[text])
        expected = any(is_duplicate(sig, other) for other in stored)
        found = backend.query_and_add(sig, f"http://x/{n}")
        assert (found is not None) is expected
        if found is None:
            stored.append(sig)
