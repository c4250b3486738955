"""What the index stores for a page, and the one decision that drops it.

A page's :class:`Signature` is two views of it:

* ``fingerprint``: the 64-bit simhash of its main text, which the permuted
  tables are probed with (:mod:`scrapy_simhash.fingerprinting.hashing`): it
  finds the *candidates*, pages within ``k`` bits;
* ``sketch``: :data:`SKETCH_BINS` bytes of evidence (:data:`LAYOUT`), most of
  it about the page's **own text**: every visible block of it less its site's
  template as the crawl learned it (:mod:`scrapy_simhash.fingerprinting.template`),
  read whatever the main-text extractor chose. One-permutation b-bit minhashes
  (Li & König; Shrivastava & Li) of word :data:`SHINGLE`-shingles (digits and
  code included) of the own text and of the main text, minhashes of its
  rare own blocks (on no other kept page but one), exact hashes of the own
  words and of all visible words, word counts and four flags.

A candidate is a duplicate only when the pages agree (:func:`confirms`), in
one of three ways:

1. **exactly**: the same own words, or the same visible words (template
   included: a mirror's copy is found even when the template learned in
   between changed what counts as own text); for any two pages;
2. **by the own text's sketch**: at least ``CONFIRM`` of every 64 filled
   bins agree, when both pages were signed with their site's template known
   and have at least :data:`SMALL_OWN` words of their own, mostly not link
   text (long blocks other kept pages repeat weigh :data:`LONG_BLOCK` words
   at most, in the sketch too). Below that, a 5-word-shingle sketch cannot
   tell two short pages apart that differ in a few words or numbers, a long
   block a few pages share makes them alike, and a page whose own text is mostly
   links (an index, a member list, a navigation tree not yet learned as
   template) differs from the next one in what its links say: such pages are
   dropped only as exact copies;
3. **by the main text's sketch**, as a copy whose own text is diluted by
   what its template does not repeat (a rotating sidebar, a partner's
   chrome): the main-text sketches agree in every filled bin (``NEAR``: the
   same main text, whatever changed around it; the sketch reads every block
   of the main-content region, those the extractor left out of the main text
   too, such as a member list's link-only cells), the own-text sketches in at
   least ``GUARD`` of every 64; both pages as in 2, and on both
   the main text is *trusted*: mostly the page's own text, not blocks that
   other pages repeat (a footer, a shared paragraph) -- at least
   :data:`SMALL_OWN` of its words are on no other kept page, and they are at
   least half of such words of the page, links aside.

On paths 2 and 3, when half or more of each page's own words are in blocks
other kept pages hold, the pages' *rare* own blocks (on no other kept page
but one) must agree too (:data:`RARE_SEEDS`): shared blocks make two own
texts alike without telling them apart. (When one page's own text is mostly
rare blocks, own texts that agree in ``CONFIRM`` of 64 bins put most of them
in the other page too.)

Why this is safe when extraction is wrong: a wrong main text (a site-wide
footer, a navigation list, a shared paragraph) is made of blocks other pages
repeat, so it is never trusted, and the decision reads only the own text,
which does not depend on the extractor. A page is dropped only when its own
text is (nearly) the kept page's, and every block left out of its own text is
on pages the crawl kept. Henzinger (SIGIR 2006) found candidates from one
method confirmed by another far more precise on same-site pages than either
alone. :func:`is_duplicate` is the decision; every backend and tool calls
:func:`confirms` or :func:`confirms_many` (the same rule, vectorised).
"""

from __future__ import annotations

import sys
from typing import NamedTuple

import numpy as np
import xxhash
from lxml import etree

import scrapy_simhash.fingerprinting.features as _features
from scrapy_simhash.fingerprinting.extract import PageText
from scrapy_simhash.fingerprinting.features import (
    read_page,
    shingle_hashes,
    sketch_words,
    title_words,
    word_hashes,
)
from scrapy_simhash.fingerprinting.hashing import (
    DEFAULT_MIN_FEATURES,
    FingerprintResult,
    fingerprint_of,
    hamming,
)
from scrapy_simhash.fingerprinting.template import SiteTemplate, block_hashes

#: The candidate distance: fingerprints at most this many bits apart are
#: compared by their sketches (``SIMHASH_MAX_DISTANCE``'s default). 7, not the
#: paper's 3: the sketches decide, and at 7 the fingerprint finds 0.92 of web
#: copies with 1% of their words edited (0.88 at 6); the sketches alone join no
#: pair of distinct pages closer than 13 bits (``bench.sketch_pairs``).
DEFAULT_MAX_DISTANCE = 7
#: Words in a sketch shingle.
SHINGLE = 5
#: Bytes of a page's sketch, the evidence every store keeps beside its fingerprint.
SKETCH_BINS = 96
#: The sketch's bytes: ``(name, first, end)``.
LAYOUT = (
    ("own text minhash, 40 bins", 0, 40),
    ("rare own blocks minhash, 8 bins", 40, 48),
    ("own words: 48-bit exact hash", 48, 54),
    ("visible words: 48-bit exact hash", 54, 60),
    ("visible word count (14 bits) | trusted main text << 14 | mostly repeated << 15",
     60, 62),
    ("own word count (14 bits) | sketchable << 14 | template known << 15", 62, 64),
    ("main text minhash, 32 bins", 64, 96),
)
OWN_BINS = 40
RARE_BINS = 8
MAIN_BINS = 32
#: A sketch confirms when at least this many of every 64 bins filled on either
#: side hold the same value: an estimated resemblance of CONFIRM / 64.
CONFIRM = 48
#: The own texts' agreement a trusted main text needs beside its own (path 3).
GUARD = 20
#: Path 3 also needs the main texts the same: ``NEAR`` of every 64 filled
#: bins, all of them. Distinct pages generated from one pattern have main
#: texts far more alike than their content containers: rust's ``NonZero*``
#: pages agree on up to 48 of 64 main bins, OpenJDK's
#: small classes on up to 55 (``bench.unseen_sites``' margin line); a family
#: of such pages meets any threshold below all bins now and then
#: (``NonZeroU16`` and ``NonZeroUsize``, 5 bits apart, were joined when
#: ``NEAR`` was 56, or the own texts alike at 42). A copy's main text agrees in
#: every bin unless it was edited; an edited copy is confirmed by its own text
#: (path 2) or not at all.
NEAR = 64
#: Own words below which a page is dropped only as an exact copy. On a short
#: page a few words make a distinct page (Boost's ``operator-=`` for months and
#: for years, Jaccard 0.46 of the content), and its shingles fill too few bins
#: to tell it from a copy: at 50 words three such pairs of Boost 1.74's
#: documentation were joined (``bench/results/heldout.txt``).
SMALL_OWN = 100
#: Own blocks of this many words or more that other kept pages hold (on
#: :data:`~scrapy_simhash.fingerprinting.template.TEMPLATE_PAGES` of them or
#: more, however few that is of the site) weigh at most this many words in
#: the own text's sketch and in the words :data:`SMALL_OWN` asks of it, all of
#: them together (:func:`sampled_sketch`). A long block a few pages repeat word
#: for word (a copyright table, a shared notice) makes their own texts alike
#: without telling them apart: Boost's concept pages ``Assignable`` and
#: ``EqualityComparable`` (Jaccard 0.12 of their content, 4 bits apart) were
#: joined so, and one of them lost in a crawl (``bench/results/heldout-crawl.txt``).
#: Left out altogether, such blocks leave a listing of teasers its articles
#: repeat no evidence but its headings: each view of it was kept (the demo's
#: listing 98 times). The exact own-text key reads them whole.
LONG_BLOCK = 50
#: Seeds of the :data:`RARE_BINS` minhashes of a page's *rare* own blocks:
#: those on no other kept page but one (fewer than the template's ``needed``;
#: the one may be the page it copies). When half or more of a page's own words
#: are in blocks other kept pages hold (menus in variants below the template's
#: share, teasers its articles repeat), two pages' own texts agree on those
#: blocks whatever else they hold: commons-collections 4's "No usage of
#: HashBag" and "No usage of CollectionBag", 83 of their 100 own words two
#: menus on 10 to 13 of 80 pages, agreed in 31 of 41 own bins. Two such pages
#: are confirmed only where their rare blocks agree as well, in at least
#: ``GUARD`` of every 64 minhashes: a copy's rare blocks are its original's but
#: for what changed (a counter, a timestamp); distinct pages' are their own.
RARE_SEEDS = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                       0xD6E8FEB86659FD93, 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53,
                       0x27D4EB2F165667C5, 0x94D049BB133111EB], dtype=np.uint64)
#: Seed of the sketch's word hashes (apart from the fingerprint's).
SKETCH_SEED = 0x5EED

_WORDS_MASK = 0x3FFF  # word counts, saturating
_SKETCHABLE = 0x4000  # SMALL_OWN own words or more, mostly not link text
_KNOWN = 0x8000  # the site's template was known when the page was signed
_TRUSTED = 0x4000  # (in the visible-words field) the main text is mostly own text
_MOSTLY_REPEATED = 0x8000  # (there too) half the own words or more in blocks other pages hold
_TAIL = 48  # the keys and counts, bytes 48..64
_EXACT_MASK = (1 << 48) - 1
_BODY_SEED = SKETCH_SEED ^ 0xB0D7  # a cut page's bytes, apart from any page's words
EMPTY_SKETCH = bytes(SKETCH_BINS)


class Signature(NamedTuple):
    """What the index stores for a page."""

    #: The 64-bit simhash the tables are probed with.
    fingerprint: int
    #: :data:`SKETCH_BINS` bytes confirming a candidate (0: an empty bin).
    sketch: bytes


class Evidence(NamedTuple):
    """A page's sketch, and its blocks' hashes (for learning its site's template)."""

    sketch: bytes
    block_hashes: np.ndarray


def own_evidence(
    page: PageText, template: SiteTemplate | None = None, body: bytes | str | None = None
) -> Evidence:
    """The sketch of a page (:data:`LAYOUT`): its own text is its visible
    blocks less the blocks ``template`` knows (none when it is None or not
    known yet). An empty sketch (:data:`EMPTY_SKETCH`, which confirms nothing)
    when the page has no visible words; when a budget cut its walk (its text
    is not all there), one that confirms only a byte copy of ``body``, the
    page as it came (:func:`cut_sketch`; empty without it)."""
    folded, sizes = _folded([text for text, _ in page.blocks])
    hashes = block_hashes(folded, folded=True)
    if not page.complete:
        return Evidence(EMPTY_SKETCH if body is None else cut_sketch(body), hashes)
    everything = sum(sizes)
    if not everything:
        return Evidence(EMPTY_SKETCH, hashes)
    known = template is not None and template.known
    own = range(len(folded))
    repeated: list[int] = []  # own blocks of LONG_BLOCK words or more other kept pages hold
    recurring = [False] * len(folded)  # blocks other kept pages hold
    if known:
        counts = template.counts(hashes)
        recurring_mask = counts >= template.needed
        recurring = recurring_mask.tolist()
        own_mask = counts < template.threshold()
        own = np.flatnonzero(own_mask).tolist()
        if max(sizes) >= LONG_BLOCK:
            long_mask = own_mask & recurring_mask & (np.asarray(sizes) >= LONG_BLOCK)
            repeated = np.flatnonzero(long_mask).tolist()
    total = linked = repeated_words = repeated_linked = recurring_words = 0
    blocks = page.blocks
    apart = set(repeated)
    rare: list[int] = []  # own blocks on no other kept page but one
    for i in own:
        size = sizes[i]
        link = size if blocks[i][1] * 2 > len(blocks[i][0]) else 0
        total += size
        linked += link
        if i in apart:
            repeated_words += size
            repeated_linked += link
        if recurring[i]:
            recurring_words += size
        else:
            rare.append(i)
    mostly_repeated = 2 * recurring_words >= total > 0
    parts = [folded[i] for i in own]
    # the evidence: repeated blocks count LONG_BLOCK words at most, all of them
    evidence, evidence_linked = total, linked
    if repeated_words > LONG_BLOCK:
        evidence = total - repeated_words + LONG_BLOCK
        evidence_linked = linked - repeated_linked + repeated_linked * LONG_BLOCK // repeated_words
    sketchable = known and evidence >= SMALL_OWN and 2 * evidence_linked < evidence
    trusted = sketchable and _trusted(page, folded, sizes, recurring)
    meta = min(total, _WORDS_MASK) | _SKETCHABLE * sketchable | _KNOWN * known
    # A sketch is made only where a path of the decision reads it (else zeros).
    # The own text is sketched from the blocks as read (the same words as
    # folded): the main text's blocks are those strings, read once for both.
    words: dict[str, bytes] = {}
    own_bins = bytes(OWN_BINS)
    rare_bins = rare_sketch(hashes[rare]) if sketchable else bytes(RARE_BINS)
    if sketchable and repeated:
        rest = [blocks[i][0] for i in own if i not in apart]
        own_bins = sampled_sketch(rest, [blocks[i][0] for i in repeated])[:OWN_BINS]
    elif sketchable:
        own_bins = shingle_sketch([blocks[i][0] for i in own], words)[:OWN_BINS]
    main_bins = bytes(MAIN_BINS)
    if sketchable and trusted:
        main = page.main
        # the region whole (its link-only cells too), not only the blocks kept
        read = main.region or (*main.headings, *main.blocks, *main.code)
        main_parts = [" ".join(title_words(main.title)), *read]
        main_bins = shingle_sketch(main_parts, words)[:MAIN_BINS]
    own_key = _exact(parts)
    # every block its own (no template known, or none of its blocks): one key twice
    page_key = own_key if len(parts) == len(folded) else _exact(folded)
    page_meta = (min(everything, _WORDS_MASK) | _TRUSTED * trusted
                 | _MOSTLY_REPEATED * mostly_repeated)
    return Evidence(
        own_bins
        + rare_bins
        + own_key.to_bytes(6, "little")
        + page_key.to_bytes(6, "little")
        + page_meta.to_bytes(2, "little")
        + meta.to_bytes(2, "little")
        + main_bins,
        hashes,
    )


def rare_sketch(hashes: np.ndarray) -> bytes:
    """:data:`RARE_BINS` minhashes of a set of block hashes (``uint64``): a
    byte (1-255) of the least ``(hash ^ seed) * (seed | 1)`` for each of
    :data:`RARE_SEEDS`; zeros for no block. Blocks, not shingles: a rare block
    that differs in one word is another block."""
    if not len(hashes):
        return bytes(RARE_BINS)
    with np.errstate(over="ignore"):
        mixed = (hashes[None, :] ^ RARE_SEEDS[:, None]) * (RARE_SEEDS[:, None] | np.uint64(1))
    least = mixed.min(axis=1)
    return (least % np.uint64(255) + np.uint64(1)).astype(np.uint8).tobytes()


def _folded(texts: list[str]) -> tuple[list[str], list[int]]:
    """Each text with its runs of white space folded into one space (as
    :func:`~scrapy_simhash.fingerprinting.template.block_hashes` reads it), and
    its words; by the compiled token loops when they were built."""
    compiled = _features._tokens
    if compiled is not None:
        return compiled.folded(texts)
    folded = [" ".join(text.split()) for text in texts]
    return folded, [text.count(" ") + 1 if text else 0 for text in folded]


def cut_sketch(body: bytes | str) -> bytes:
    """The sketch of a page whose walk a budget cut: only its visible-words
    key, naming the page's bytes (``str`` as UTF-8), with the word count
    saturated. Path 1 confirms it on a byte copy alone; no other path reads
    it (no own words, template not known)."""
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogatepass")
    key = xxhash.xxh3_64_intdigest(body, _BODY_SEED) & _EXACT_MASK
    return _cut(key.to_bytes(6, "little"))


def _cut(key: bytes) -> bytes:
    """A cut page's sketch around its 6-byte visible-words ``key``."""
    return bytes(_TAIL + 6) + key + _WORDS_MASK.to_bytes(2, "little") + bytes(2 + MAIN_BINS)


def _trusted(page: PageText, folded: list[str], sizes: list[int], recurring: list[bool]) -> bool:
    """Whether the main text is mostly the page's own text: at least
    :data:`SMALL_OWN` of its words are in blocks no other kept page holds, and
    those are at least half of the page's such words (link lists aside)."""
    main = page.main
    # most main texts are blocks' texts (the same strings): folded once
    fold = {raw: text for text, (raw, _) in zip(folded, page.blocks)}
    in_main = {
        fold[text] if text in fold else " ".join(text.split())
        for text in (*main.headings, *main.blocks, *main.code)
    }
    main_words = page_words = 0
    for text, (raw, link), size, common in zip(folded, page.blocks, sizes, recurring):
        if common:
            continue
        if text in in_main:
            main_words += size
        if link * 2 <= len(raw):
            page_words += size
    return main_words >= SMALL_OWN and 2 * main_words >= page_words


#: Each Latin-1 character's lower-case form (one Latin-1 character).
_LATIN1_LOWER = bytes(ord(chr(b).lower()) for b in range(256))


def _exact(folded: list[str]) -> int:
    """48 bits naming the words of blocks exactly (case aside); by the
    compiled token loops when they were built."""
    compiled = _features._tokens
    if compiled is not None:
        key = compiled.exact_hash(folded, _LATIN1_LOWER, SKETCH_SEED, xxhash.xxh3_64_intdigest)
    else:
        words = " ".join(folded).lower().encode("utf-8", "surrogatepass")
        key = xxhash.xxh3_64_intdigest(words, SKETCH_SEED)
    return key & _EXACT_MASK


def shingle_sketch(texts: list[str], words: dict[str, bytes] | None = None) -> bytes:
    """The 64-bin sketch (:func:`sketch_of_hashes`) of the word
    :data:`SHINGLE`-shingles of ``texts`` (words as
    :func:`~scrapy_simhash.fingerprinting.features.sketch_words` reads them),
    by the compiled token loops when they were built. ``words``: where they
    keep each text's word hashes, so that a page's second sketch does not
    read again the blocks its first one read."""
    compiled = _features._tokens
    if compiled is None:
        return sketch_of_hashes(_shingles(texts))
    return compiled.text_sketch(
        texts, _features._LATIN1_SKETCH_WORDS, _features._SEPARATORS, _features.sketch_text,
        SHINGLE, SKETCH_SEED, xxhash.xxh3_64_intdigest, {} if words is None else words,
    )


_LOW_BITS = np.uint64(0xFFFFFFFF)


def sampled_sketch(texts: list[str], repeated: list[str]) -> bytes:
    """The sketch (:func:`sketch_of_hashes`) of the word
    :data:`SHINGLE`-shingles of ``texts`` and of about :data:`LONG_BLOCK`
    shingles of ``repeated`` (long blocks other kept pages hold), chosen by
    their hashes' low bits: a copy's same blocks give the same sample, and
    however long, they weigh no more than that in the resemblance."""
    sample = _shingles(repeated)
    if len(sample) > LONG_BLOCK:
        with np.errstate(over="ignore"):
            keep = (sample & _LOW_BITS) * np.uint64(len(sample)) < np.uint64(LONG_BLOCK << 32)
        sample = sample[keep]
    return sketch_of_hashes(np.concatenate([_shingles(texts), sample]))


def _shingles(texts: list[str]) -> np.ndarray:
    """``uint64`` hashes of the word :data:`SHINGLE`-shingles of ``texts``, in
    Python (what the compiled token loops compute inside :func:`shingle_sketch`)."""
    return shingle_hashes(word_hashes(sketch_words(texts), SKETCH_SEED), SHINGLE)


_BIN_SHIFT = np.uint64(64 - 6)  # log2(64) leading bits choose the bin
_BINS = np.arange(64, dtype=np.uint64)


def sketch_of_hashes(hashes: np.ndarray) -> bytes:
    """The 64-bin b-bit one-permutation minhash of a set given as ``uint64``
    hashes: bin ``i`` holds a byte (1-255) of the least hash whose leading
    six bits are ``i``, or 0 when no hash falls in it. A page's sketch keeps
    the first :data:`OWN_BINS` bins."""
    hashes = np.sort(np.asarray(hashes, dtype=np.uint64))
    out = np.zeros(64, dtype=np.uint8)
    if len(hashes):
        bins = hashes >> _BIN_SHIFT
        first = np.searchsorted(bins, _BINS)
        filled = first < len(hashes)
        filled[filled] = bins[first[filled]] == _BINS[filled]
        least = hashes[first[filled]]
        out[filled] = (least % np.uint64(255) + np.uint64(1)).astype(np.uint8)
    return out.tobytes()


class Agreement(NamedTuple):
    """How two sketches compare, and the verdict (:func:`confirmation`)."""

    #: Whether they confirm a candidate.
    confirms: bool
    #: Which path confirmed (``"exact: ..."``, ``"own text"``, ``"main text ..."``),
    #: or why none did.
    reason: str
    #: Own-text bins holding the same non-zero byte in both, and bins non-zero in either.
    matches: int
    filled: int
    #: Own words of each page.
    words: tuple[int, int]


def _fields(sketches: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(own bins, main bins, own key, page key, own meta, trusted)`` of
    ``(n, SKETCH_BINS)`` sketches: the keys of :func:`exact_keys` (0 where
    there are no words)."""
    tail = np.ascontiguousarray(sketches[:, _TAIL:64]).view("<u8")  # 2 words a row
    own_hash = tail[:, 0] & np.uint64(_EXACT_MASK)
    page_hash = (tail[:, 0] >> np.uint64(48)) | ((tail[:, 1] & np.uint64(0xFFFFFFFF)) << np.uint64(16))
    page_field = (tail[:, 1] >> np.uint64(32)) & np.uint64(0xFFFF)
    page_words = page_field & np.uint64(_WORDS_MASK)
    meta = tail[:, 1] >> np.uint64(48)
    own_words = meta & np.uint64(_WORDS_MASK)
    own_key = np.where(own_words > 0, own_hash | (own_words << np.uint64(48)), np.uint64(0))
    page_key = np.where(
        page_words > 0,
        page_hash | (page_words << np.uint64(48)) | np.uint64(1 << 63),
        np.uint64(0),
    )
    trusted = (page_field & np.uint64(_TRUSTED)) != 0
    return sketches[:, :OWN_BINS], sketches[:, 64:], own_key, page_key, meta, trusted


def exact_keys(sketches: np.ndarray) -> np.ndarray:
    """``(n, 2)`` ``uint64``: per sketch, a key naming its own words exactly
    and one naming all its visible words (the top bit set); 0 where a page has
    no such words. Equal keys, the same words: stores index them to find exact
    copies in O(1)."""
    rows = np.asarray(sketches, dtype=np.uint8).reshape(-1, SKETCH_BINS)
    _, _, own, page, _, _ = _fields(rows)
    return np.stack([own, page], axis=1)


def sketch_keys(sketch: bytes) -> tuple[int, int]:
    """:func:`exact_keys` of one sketch as two ints, without numpy: what a
    probe looks up (a numpy call costs more than this whole function)."""
    w6 = int.from_bytes(sketch[48:56], "little")
    w7 = int.from_bytes(sketch[56:64], "little")
    own_words = (w7 >> 48) & _WORDS_MASK
    page_words = (w7 >> 32) & _WORDS_MASK
    own = (w6 & _EXACT_MASK) | own_words << 48 if own_words else 0
    page = (w6 >> 48 | (w7 & 0xFFFFFFFF) << 16 | page_words << 48 | 1 << 63) if page_words else 0
    return own, page


def _agree(a: np.ndarray, b: np.ndarray, share: int) -> tuple[np.ndarray, ...]:
    """Per row: whether at least ``share`` of every 64 filled bins agree, and
    the agreeing and filled bins."""
    matches = np.count_nonzero((a == b) & (a != 0), axis=1)
    filled = np.count_nonzero((a != 0) | (b != 0), axis=1)
    return (filled > 0) & (matches * 64 >= share * filled), matches, filled


# confirms_many reads a sketch's bytes 48..64 as two little-endian words (the
# tail of LAYOUT): word 6 holds the own words' hash and the visible words' hash
# (low 16 bits), word 7 the rest of it, the visible word count with the trusted
# and mostly-repeated flags (bits 46, 47) and the own word count with the
# sketchable and known flags (bits 62, 63).
_OWN_KEY = (np.uint64(_EXACT_MASK), np.uint64(_WORDS_MASK << 48))
_PAGE_KEY = (np.uint64(_EXACT_MASK ^ (2**64 - 1)), np.uint64(0xFFFFFFFF | _WORDS_MASK << 32))
_OWN_WORDS = np.uint64(_WORDS_MASK << 48)
_PAGE_WORDS = np.uint64(_WORDS_MASK << 32)
_BOTH = np.uint64((_SKETCHABLE | _KNOWN) << 48)
_BOTH_TRUSTED = np.uint64((_SKETCHABLE | _KNOWN) << 48 | _TRUSTED << 32)
_REPEATED = np.uint64(_MOSTLY_REPEATED << 32)
_ZERO = np.uint64(0)
_EMPTY = np.uint8(0)
#: The columns bins are counted in: own bins, rare bins, the tail (not bins), main bins.
_REGIONS = np.array([0, OWN_BINS, _TAIL, 64], dtype=np.intp)
_ONE, _SCALE = np.uint16(1), np.uint16(64)
_CONFIRM, _GUARD = np.uint16(CONFIRM), np.uint16(GUARD)
_NEAR = np.uint16(NEAR)

try:  # the same rule compiled, for a probe's candidates (_confirm.pyx), when built
    import scrapy_simhash.fingerprinting._confirm as _confirm
except ImportError:  # pure-Python install: numpy alone, the same verdicts
    _confirm = None
if sys.byteorder != "little":  # it reads the keys as native words
    _confirm = None
if _confirm is not None:
    _confirm.configure(
        bins=SKETCH_BINS, own_bins=OWN_BINS, tail=_TAIL, main=64, confirm=CONFIRM,
        guard=GUARD, near=NEAR, own_key=tuple(map(int, _OWN_KEY)),
        page_key=tuple(map(int, _PAGE_KEY)), own_words=int(_OWN_WORDS),
        page_words=int(_PAGE_WORDS), both=int(_BOTH), both_trusted=int(_BOTH_TRUSTED),
        repeated=int(_REPEATED))


def confirms_many(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`confirms` for many pairs at once: ``a`` and ``b`` are ``(n,
    SKETCH_BINS)`` ``uint8`` arrays of sketches, or one of them a single row
    compared with every row of the other (a probe against its candidates).
    Written for few numpy calls, as a probe confirms at most a few hundred
    candidates and each call's overhead is most of its cost."""
    a = np.ascontiguousarray(a, dtype=np.uint8).reshape(-1, SKETCH_BINS)
    b = np.ascontiguousarray(b, dtype=np.uint8).reshape(-1, SKETCH_BINS)
    if _confirm is not None and (len(a) == 1 or len(b) == 1):  # one against one or many
        # the rule is symmetric in its two pages (tests/test_memory_probe.py)
        return _confirm.confirm_rows(a, b[0]) if len(b) == 1 else _confirm.confirm_rows(b, a[0])
    words_a, words_b = a.view("<u8"), b.view("<u8")
    d6 = np.bitwise_xor(words_a[:, 6], words_b[:, 6])
    d7 = np.bitwise_xor(words_a[:, 7], words_b[:, 7])
    # 1. exactly: the same key of exact_keys, not the empty one (no words)
    exact = np.equal(np.bitwise_and(d6, _OWN_KEY[0]) | np.bitwise_and(d7, _OWN_KEY[1]), _ZERO)
    exact &= np.not_equal(np.bitwise_and(words_b[:, 7], _OWN_WORDS), _ZERO)
    page = np.equal(np.bitwise_and(d6, _PAGE_KEY[0]) | np.bitwise_and(d7, _PAGE_KEY[1]), _ZERO)
    exact |= page & np.not_equal(np.bitwise_and(words_b[:, 7], _PAGE_WORDS), _ZERO)
    both = np.bitwise_and(words_a[:, 7], words_b[:, 7])  # flags both pages carry
    flags = np.bitwise_and(both, _BOTH_TRUSTED)
    # _agree's bins, counted per region: agreeing (the same non-zero byte) and filled
    filled = np.not_equal(a, _EMPTY)
    matches = np.add.reduceat(
        (np.equal(a, b) & filled).view(np.uint8), _REGIONS, axis=1, dtype=np.uint16
    )
    filled = np.add.reduceat(
        (filled | np.not_equal(b, _EMPTY)).view(np.uint8), _REGIONS, axis=1, dtype=np.uint16
    )
    # at least share of every 64 filled bins agree, and some bin is filled
    np.maximum(filled, _ONE, out=filled)
    np.multiply(matches, _SCALE, out=matches)
    # 2. own texts agree (both pages sketchable, templates known); 3. main
    # texts the same (NEAR, above CONFIRM), trusted on both, own texts guarding
    sketched = (flags >= _BOTH) & (matches[:, 0] >= filled[:, 0] * _CONFIRM)
    main = np.equal(flags, _BOTH_TRUSTED) & (matches[:, 3] >= filled[:, 3] * _NEAR)
    sketched |= main & (matches[:, 0] >= filled[:, 0] * _GUARD)
    # both own texts mostly blocks other pages hold: the rare blocks agree too
    repeated = np.not_equal(np.bitwise_and(both, _REPEATED), _ZERO)
    sketched &= ~repeated | (matches[:, 1] >= filled[:, 1] * _GUARD)
    return exact | sketched


def confirmation(a: bytes, b: bytes) -> Agreement:
    """The verdict of :func:`confirms` on two sketches, with what it rests on."""
    if len(a) != SKETCH_BINS or len(b) != SKETCH_BINS:
        raise ValueError(f"sketches have {SKETCH_BINS} bytes, not {len(a)} and {len(b)}")
    x = np.frombuffer(a, dtype=np.uint8).reshape(1, -1)
    y = np.frombuffer(b, dtype=np.uint8).reshape(1, -1)
    own_a, main_a, key_a, page_a, meta_a, trusted_a = (v[0] for v in _fields(x))
    own_b, main_b, key_b, page_b, meta_b, trusted_b = (v[0] for v in _fields(y))
    _, matches, filled = _agree(own_a[None], own_b[None], CONFIRM)
    matches, filled = int(matches[0]), int(filled[0])
    meta_a, meta_b = int(meta_a), int(meta_b)
    words = (meta_a & _WORDS_MASK, meta_b & _WORDS_MASK)
    verdict = bool(confirms_many(x, y)[0])
    if key_a and key_a == key_b:
        reason = "exact: the same own text"
    elif page_a and page_a == page_b:
        reason = ("exact: the same bytes (a page whose walk was cut)" if a == _cut(a[54:60])
                  else "exact: the same visible text")
    elif not all(words):
        reason = ("a page has no text, or its walk was cut: only an exact (for a cut "
                  "page, a byte) copy is dropped")
    elif not (meta_a & _KNOWN and meta_b & _KNOWN):
        reason = "a site's template was not known yet: only an exact copy is dropped"
    elif not (meta_a & _SKETCHABLE and meta_b & _SKETCHABLE):
        reason = (
            f"fewer than {SMALL_OWN} own words (long blocks other pages repeat weighing "
            f"{LONG_BLOCK} at most), or mostly link text: only an exact copy is dropped"
        )
    elif verdict:
        reason = ("own text" if matches * 64 >= CONFIRM * filled
                  else "main text (trusted on both pages), own texts guarding")
    elif _rare_differ(a, b):
        reason = ("own text mostly blocks other kept pages hold, and the blocks "
                  "on no other kept page differ")
    elif not (trusted_a and trusted_b):
        reason = "own texts differ, and a main text is not trusted (mostly repeated blocks)"
    else:
        reason = "own texts differ"
    return Agreement(verdict, reason, matches, filled, words)


def _rare_differ(a: bytes, b: bytes) -> bool:
    """Whether both pages' own texts are mostly blocks other kept pages hold
    and their rare blocks (:data:`RARE_SEEDS`) do not agree."""
    flags = int.from_bytes(a[60:62], "little") & int.from_bytes(b[60:62], "little")
    if not flags & _MOSTLY_REPEATED:
        return False
    x = np.frombuffer(a[OWN_BINS:_TAIL], np.uint8)[None]
    y = np.frombuffer(b[OWN_BINS:_TAIL], np.uint8)[None]
    return not bool(_agree(x, y, GUARD)[0][0])


def confirms(a: bytes, b: bytes) -> bool:
    """Whether two pages' sketches confirm a candidate: their own texts are
    the same words, or (both templates known, both with :data:`SMALL_OWN` own
    words mostly not links) at least ``CONFIRM`` of every 64 filled bins agree."""
    return confirmation(a, b).confirms


def resemblance(a: bytes, b: bytes) -> float:
    """The Jaccard resemblance two minhashes of equal length
    (:func:`sketch_of_hashes`) estimate: bins holding the same non-zero byte
    over bins non-zero in either (0 when both are empty)."""
    if len(a) != len(b):
        raise ValueError(f"minhashes of {len(a)} and {len(b)} bytes cannot be compared")
    x = np.frombuffer(a, dtype=np.uint8)[None]
    y = np.frombuffer(b, dtype=np.uint8)[None]
    _, matches, filled = _agree(x, y, CONFIRM)
    return int(matches[0]) / int(filled[0]) if filled[0] else 0.0


def is_duplicate(a: Signature, b: Signature, *, k: int | None = None) -> bool:
    """The drop decision between two pages' signatures: fingerprints within
    ``k`` bits (default :data:`DEFAULT_MAX_DISTANCE`, as
    ``SIMHASH_MAX_DISTANCE``) and sketches that confirm it."""
    limit = DEFAULT_MAX_DISTANCE if k is None else k
    return hamming(a.fingerprint, b.fingerprint) <= limit and confirms(a.sketch, b.sketch)


class Analysis(NamedTuple):
    """What one read of a page gives: its signature (None without a
    fingerprint), the fingerprint's details, and the page's evidence (its
    sketch and block hashes, for learning its site's template)."""

    signature: Signature | None
    details: FingerprintResult
    evidence: Evidence


def analyse(
    page: str | bytes | etree._Element,
    *,
    template: SiteTemplate | None = None,
    min_features: int = DEFAULT_MIN_FEATURES,
    seed: int = 0,
    encoding: str | None = None,
    body: bytes | str | None = None,
) -> Analysis:
    """Read a page once: main text -> fingerprint; every block -> own text
    (less ``template``) -> sketch. ``body``: the page as it came, when
    ``page`` is its tree (a page given as HTML is its own body): a page whose
    walk a budget cut is then dropped as a byte copy. Never raises on page
    content."""
    page_text, tokens = read_page(page, encoding)
    if body is None and isinstance(page, (bytes, str)):
        body = page
    return sign(page_text, tokens, template=template, min_features=min_features, seed=seed,
                body=body)


def sign(
    page: PageText,
    tokens: dict[str, list[str]] | None = None,
    *,
    template: SiteTemplate | None = None,
    min_features: int = DEFAULT_MIN_FEATURES,
    seed: int = 0,
    body: bytes | str | None = None,
) -> Analysis:
    """:func:`analyse` of a page already read (``tokens``: its blocks'
    tokens, when known). The fingerprint reads ``page.main``, the sketch
    ``page.blocks`` only: what the extractor chose as main text cannot make
    two pages' own texts agree."""
    details = fingerprint_of(page.main, tokens, min_features=min_features, seed=seed)
    evidence = own_evidence(page, template, body)
    if details.fingerprint is None:
        return Analysis(None, details, evidence)
    return Analysis(Signature(details.fingerprint, evidence.sketch), details, evidence)


def signature_details(
    page: str | bytes | etree._Element,
    *,
    template: SiteTemplate | None = None,
    min_features: int = DEFAULT_MIN_FEATURES,
    seed: int = 0,
    encoding: str | None = None,
) -> tuple[Signature | None, FingerprintResult]:
    """:func:`signature`, with the fingerprint's details (feature count, the
    reason when there is none). Never raises on page content."""
    found = analyse(
        page, template=template, min_features=min_features, seed=seed, encoding=encoding
    )
    return found.signature, found.details


def signature(
    page: str | bytes | etree._Element,
    *,
    template: SiteTemplate | None = None,
    min_features: int = DEFAULT_MIN_FEATURES,
    seed: int = 0,
    encoding: str | None = None,
) -> Signature | None:
    """What the index stores for a page (HTML ``str``/``bytes`` or an lxml
    element, as :func:`~scrapy_simhash.fingerprint` takes), or None when the
    page gets no fingerprint. ``template``: the page's site template as a
    crawl learned it (without one, the sketch confirms exact copies only).
    ``signature(page).fingerprint == fingerprint(page)``. Never raises on page
    content."""
    return analyse(
        page, template=template, min_features=min_features, seed=seed, encoding=encoding
    ).signature
