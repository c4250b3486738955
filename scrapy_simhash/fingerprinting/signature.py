"""What the index stores for a page, and the one decision that drops it.

A page's :class:`Signature` is two views of its main content:

* ``fingerprint``: the 64-bit simhash the permuted tables are probed with
  (spot signatures of the prose, content features of tables and code; dates
  and counters left out), :mod:`scrapy_simhash.fingerprinting.hashing`;
* ``sketch``: a one-permutation b-bit minhash (Li & König; Shrivastava & Li)
  of the word :data:`SHINGLE`-shingles of *all* the main text -- title,
  headings, prose, table cells, code, numbers included -- whose agreement
  estimates the Jaccard resemblance of the two pages' shingle sets.

A stored page is a duplicate of a new one only when the fingerprints are
within ``k`` bits (the candidate) *and* the sketches agree (the
confirmation): Henzinger (SIGIR 2006) found that candidates from one method
confirmed by another are far more precise on same-site pages than either
alone. The confirmation is what lets ``k`` be wider than one 64-bit view
would allow. :func:`is_duplicate` is the decision; every backend calls it or
mirrors it exactly (the Redis script; a test compares them).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import xxhash
from lxml import etree

from scrapy_simhash.fingerprinting import features as _features
from scrapy_simhash.fingerprinting.extract import MainText
from scrapy_simhash.fingerprinting.features import (
    _main_text,
    _title_words,
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

#: The candidate distance: fingerprints at most this many bits apart are
#: compared by their sketches (``SIMHASH_MAX_DISTANCE``'s default).
DEFAULT_MAX_DISTANCE = 6
#: Words in a sketch shingle.
SHINGLE = 5
#: Bins of the sketch, one byte each.
SKETCH_BINS = 64
#: A candidate is confirmed when at least this many of every 64 bins that are
#: filled on either side hold the same value: an estimated resemblance of
#: the shingle sets of at least CONFIRM / 64.
CONFIRM = 48
#: Seed of the sketch's token hashes (apart from the fingerprint's).
SKETCH_SEED = 0x5EED

_WORDS = re.compile(r"\w+")
_BIN_SHIFT = np.uint64(64 - 6)  # log2(SKETCH_BINS) leading bits choose the bin
_BINS = np.arange(SKETCH_BINS, dtype=np.uint64)


class Signature(NamedTuple):
    """What the index stores for a page."""

    #: The 64-bit simhash the tables are probed with.
    fingerprint: int
    #: :data:`SKETCH_BINS` bytes confirming a candidate (0: an empty bin).
    sketch: bytes


def sketch_tokens(main: MainText) -> list[str]:
    """The words the sketch is made of: the title's own part, the headings,
    the body blocks and preformatted blocks, in order, lower-cased, digits
    kept (:func:`sketch` takes them as UTF-8 from
    :func:`~scrapy_simhash.fingerprinting.features.sketch_words`, faster; this is
    the reference)."""
    text = "\n".join((" ".join(title_words(main.title)), *main.headings, *main.blocks, *main.code))
    return _WORDS.findall(unicodedata.normalize("NFKC", text).lower())


def sketch(main: MainText) -> bytes:
    """The sketch of a main text's word :data:`SHINGLE`-shingles
    (:func:`sketch_of_hashes`) of the words of :func:`sketch_tokens`."""
    parts = (" ".join(_title_words(main.title)), *main.headings, *main.blocks, *main.code)
    compiled = _features._tokens
    if compiled is None:
        words = sketch_words(parts)
        return sketch_of_hashes(shingle_hashes(word_hashes(words, SKETCH_SEED), SHINGLE))
    # The same, compiled: on the Latin-1 text itself, else on its words.
    digest = xxhash.xxh3_64_intdigest
    text = _features._separated("\n".join(parts)).lower()
    table = _features._LATIN1_SKETCH_WORDS
    found = compiled.latin1_sketch(text, table, SHINGLE, SKETCH_SEED, digest)
    if found is None:
        found = compiled.sketch(sketch_words(parts), SHINGLE, SKETCH_SEED, digest)
    return found


def sketch_of_hashes(hashes: np.ndarray) -> bytes:
    """The b-bit one-permutation minhash of a set given as ``uint64`` hashes:
    bin ``i`` holds a byte (1-255) of the least hash whose leading bits are
    ``i``, or 0 when no hash falls in it."""
    hashes = np.sort(np.asarray(hashes, dtype=np.uint64))
    out = np.zeros(SKETCH_BINS, dtype=np.uint8)
    if len(hashes):
        bins = hashes >> _BIN_SHIFT
        first = np.searchsorted(bins, _BINS)
        filled = first < len(hashes)
        filled[filled] = bins[first[filled]] == _BINS[filled]
        least = hashes[first[filled]]
        out[filled] = (least % np.uint64(255) + np.uint64(1)).astype(np.uint8)
    return out.tobytes()


def agreement(a: bytes, b: bytes) -> tuple[int, int]:
    """``(matches, filled)``: bins holding the same non-zero byte in both
    sketches, and bins non-zero in either."""
    x = np.frombuffer(a, dtype=np.uint8)
    y = np.frombuffer(b, dtype=np.uint8)
    if len(x) != len(y):
        raise ValueError(f"sketches of {len(x)} and {len(y)} bytes cannot be compared")
    matches = int(np.count_nonzero((x == y) & (x != 0)))
    filled = int(np.count_nonzero((x != 0) | (y != 0)))
    return matches, filled


def resemblance(a: bytes, b: bytes) -> float:
    """The estimated Jaccard resemblance of two pages' shingle sets (0 when
    both sketches are empty)."""
    matches, filled = agreement(a, b)
    return matches / filled if filled else 0.0


def confirms(a: bytes, b: bytes) -> bool:
    """Whether two sketches confirm a candidate: ``matches * 64 >= CONFIRM *
    filled`` (integers, so that the Redis script decides exactly the same)."""
    matches, filled = agreement(a, b)
    return filled > 0 and matches * 64 >= CONFIRM * filled


def confirms_many(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`confirms` for many pairs at once: ``a`` and ``b`` are ``(n,
    SKETCH_BINS)`` ``uint8`` arrays of sketches; the same integer rule."""
    a = np.asarray(a, dtype=np.uint8)
    b = np.asarray(b, dtype=np.uint8)
    matches = np.count_nonzero((a == b) & (a != 0), axis=1)
    filled = np.count_nonzero((a != 0) | (b != 0), axis=1)
    return (filled > 0) & (matches * 64 >= CONFIRM * filled)


def is_duplicate(a: Signature, b: Signature, *, k: int | None = None) -> bool:
    """The drop decision between two pages' signatures: fingerprints within
    ``k`` bits (default :data:`DEFAULT_MAX_DISTANCE`, as
    ``SIMHASH_MAX_DISTANCE``) and sketches that confirm it."""
    limit = DEFAULT_MAX_DISTANCE if k is None else k
    return hamming(a.fingerprint, b.fingerprint) <= limit and confirms(a.sketch, b.sketch)


def signature_of(
    main: MainText,
    tokens: Mapping[str, list[str]] | None = None,
    *,
    min_features: int = DEFAULT_MIN_FEATURES,
    seed: int = 0,
) -> Signature | None:
    """The signature of a page's main text (``tokens``: block texts already
    tokenized), or None when it gets no fingerprint."""
    fp = fingerprint_of(main, tokens, min_features=min_features, seed=seed).fingerprint
    return None if fp is None else Signature(fp, sketch(main))


def signature_details(
    page: str | bytes | etree._Element,
    *,
    min_features: int = DEFAULT_MIN_FEATURES,
    seed: int = 0,
    encoding: str | None = None,
) -> tuple[Signature | None, FingerprintResult]:
    """:func:`signature`, with the fingerprint's details (feature count, the
    reason when there is none). Never raises on page content."""
    main, tokens = _main_text(page, encoding)
    result = fingerprint_of(main, tokens, min_features=min_features, seed=seed)
    if result.fingerprint is None:
        return None, result
    return Signature(result.fingerprint, sketch(main)), result


def signature(
    page: str | bytes | etree._Element,
    *,
    min_features: int = DEFAULT_MIN_FEATURES,
    seed: int = 0,
    encoding: str | None = None,
) -> Signature | None:
    """What the index stores for a page (HTML ``str``/``bytes`` or an lxml
    element, as :func:`~scrapy_simhash.fingerprint` takes), or None when the
    page gets no fingerprint. ``signature(page).fingerprint ==
    fingerprint(page)``. Never raises on page content."""
    return signature_of(*_main_text(page, encoding), min_features=min_features, seed=seed)
