"""64-bit simhash fingerprints of HTML pages (Charikar 2002; Manku et al. 2007).

A page's main text (:mod:`scrapy_simhash.fingerprinting.extract`) becomes weighted
features (:mod:`scrapy_simhash.fingerprinting.features`): spot signatures of its prose,
the words of its title and headings, and word shingles of its other blocks (table cells,
code, lists), digits left out; each feature is hashed with xxh3_64 and the weighted bit
votes are summed with numpy. Near-duplicate pages
get fingerprints a few bits apart. Everything here is deterministic across
processes and platforms (no use of Python's ``hash()``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import NamedTuple

import numpy as np
import xxhash
from lxml import etree

from scrapy_simhash.fingerprinting.extract import MainText
from scrapy_simhash.fingerprinting.features import (
    _all_tokens,
    _content,
    _main_text,
    analyse_main_text,
    feature_hashes,
    page_features,
)

logger = logging.getLogger(__name__)

#: Bumped whenever any fingerprint can change (persisted indexes record it).
#: 3: elements nested more than ``extract.MAX_DEPTH`` levels deep are read as
#: plain text (the only change from 2; no corpus page is that deep).
#: 4: content features of tables, code and lists; the minimum number of
#: features scales with the page; the region of a page that is not mostly
#: prose is located by its tokens too; every page stores a sketch beside its
#: fingerprint (:mod:`scrapy_simhash.fingerprinting.signature`).
#: 5: extraction's over-pruning fallback brings back the misnamed elements
#: holding much text first, and still locates the main-content region.
#: 6: the main-content region holds at least two body blocks (a lone prose
#: paragraph is never the region: it left out a release note's own items);
#: the last fallback (every rule off) leaves link lists out, then reads only
#: the text outside landmarks, and a page with too little of it gets none.
#: 7: the sketch is the evidence of the page's own text (every visible block
#: less its site's template learned from the crawl), not of its main text;
#: short or link-dominated own texts confirm only as exact copies.
#: 8: the sketch holds minhashes of the page's rare own blocks (40 own-text
#: bins, 48 before); two pages whose own texts are both mostly blocks other
#: kept pages hold confirm only where those agree too.
#: 9: the main text's sketch reads every block of the main-content region,
#: those the extractor left out of the main text too (a member list's
#: link-only cells, which alone told a derived class's list from its base's).
FINGERPRINT_VERSION = 9
#: Pages with fewer distinct spot signatures (title and heading features not
#: counted) get no fingerprint and are never flagged.
DEFAULT_MIN_FEATURES = 6
#: A fingerprint needs at least one distinct feature per this many tokens of
#: main text (the minimum scales with the page).
TOKENS_PER_FEATURE = 100
#: Weight of a content feature, however often it occurs: the cells and lines a
#: table or listing repeats on every row ("EVEX", "static") are its template,
#: those it holds once are its content. (A spot weighs its occurrences.)
CONTENT_WEIGHT = 1.0

_LE_U64 = np.dtype("<u8")


def features(
    page: str | bytes | etree._Element, *, encoding: str | None = None
) -> dict[str, float]:
    """The weighted features of a page (to see why two pages match)."""
    return page_features(page, encoding=encoding)


def simhash(
    weighted_features: Mapping[str, float] | Iterable[tuple[str, float]], *, seed: int = 0
) -> int:
    """The 64-bit simhash of weighted features: bit i is set when the features
    whose xxh3_64 has bit i set outweigh the others. 0 for no features."""
    items = (
        weighted_features.items()
        if isinstance(weighted_features, Mapping)
        else weighted_features
    )
    hashes: list[int] = []
    weights: list[float] = []
    digest = xxhash.xxh3_64_intdigest
    for feature, weight in items:
        hashes.append(digest(feature.encode("utf-8", "surrogatepass"), seed))
        weights.append(weight)
    return simhash_hashes(np.array(hashes, dtype=_LE_U64), np.array(weights, dtype=np.float64))


#: Features whose bits are unpacked at a time (:func:`bit_votes`): a vote needs
#: ~2.3 MB (their bits, and a ``float64`` copy for a weighted vote) whatever the
#: number of features (an N x 64 ``float64`` matrix was 150 MB for 300,000).
SIMHASH_CHUNK = 4096


def bit_votes(hashes: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Per bit (``float64[64]``, bit 0 first), the weight of the features whose
    ``uint64`` hash has it set; ``weights=None``: each feature weighs 1 (a count,
    several times cheaper than a weighted sum)."""
    h = np.ascontiguousarray(hashes, dtype=_LE_U64)
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    ones = np.zeros(64, dtype=np.float64)
    for start in range(0, len(h), SIMHASH_CHUNK):
        chunk = h[start : start + SIMHASH_CHUNK]
        # bits[i, j] = bit j of hash i (little-endian bytes, little bit order).
        bits = np.unpackbits(chunk.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
        if w is None:
            ones += bits.sum(axis=0, dtype=np.int64)
        else:
            ones += w[start : start + SIMHASH_CHUNK] @ bits
    return ones


def _fingerprint_of_votes(ones: np.ndarray, total: float) -> int:
    """Bit i set when its votes outweigh the others (more than half ``total``)."""
    votes = (2.0 * ones > total).astype(np.uint8)
    return int(np.packbits(votes, bitorder="little").view(_LE_U64)[0])


def simhash_hashes(hashes: np.ndarray, weights: np.ndarray) -> int:
    """The 64-bit simhash of features given as their ``uint64`` hashes and
    weights (what :func:`simhash` computes once the features are hashed)."""
    if not len(hashes):
        return 0
    w = np.asarray(weights, dtype=np.float64)
    return _fingerprint_of_votes(bit_votes(hashes, w), w.sum())


def _unique(hashes: np.ndarray) -> np.ndarray:
    """``np.unique(hashes)`` of ``uint64`` hashes by a sort (numpy 2's hash-based
    unique costs several times more on 10^5 of them)."""
    ordered = np.sort(hashes)
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


class FingerprintResult(NamedTuple):
    """A page's fingerprint with what it was computed from."""

    #: The 64-bit simhash, or None when the page has too few features.
    fingerprint: int | None
    #: Distinct spot signatures of the main text (title and heading words not
    #: counted): the figure compared with ``min_features``.
    feature_count: int
    #: Why there is no fingerprint (None when there is one).
    reason: str | None


def fingerprint_details(
    page: str | bytes | etree._Element,
    *,
    min_features: int = DEFAULT_MIN_FEATURES,
    seed: int = 0,
    encoding: str | None = None,
) -> FingerprintResult:
    """:func:`fingerprint` with the feature count it was decided on, and the
    reason when there is no fingerprint. Never raises on page content."""
    return fingerprint_of(*_main_text(page, encoding), min_features=min_features, seed=seed)


def fingerprint_of(
    main: MainText,
    tokens: Mapping[str, list[str]] | None = None,
    *,
    min_features: int = DEFAULT_MIN_FEATURES,
    seed: int = 0,
) -> FingerprintResult:
    """The fingerprint of a page's main text (``tokens`` maps block texts
    already tokenized to their tokens): spot signatures of its prose, title
    and heading words, and content features of its other blocks (tables,
    code, lists). None when it has fewer distinct spot signatures and content
    features than ``min_features``, or than one per
    :data:`TOKENS_PER_FEATURE` tokens of main text (a fingerprint resting on a
    few features out of a long page is fragile)."""
    if tokens is not None:
        tokens = _all_tokens(main, tokens)
    _, feats, count = analyse_main_text(main, tokens)
    content, size = _content(main, tokens, seed)
    content = _unique(content)
    count += len(content)
    needed = max(min_features, -(-size // TOKENS_PER_FEATURE))
    if count < needed:
        if not count:
            reason = "no main text"
        elif needed > min_features:
            reason = (
                f"{count} features for {size} tokens of main text, fewer than one per "
                f"{TOKENS_PER_FEATURE}"
            )
        else:
            reason = f"{count} features, fewer than min_features={min_features}"
        return FingerprintResult(None, count, reason)
    hashes = feature_hashes(feats, seed)
    weights = np.fromiter(feats.values(), dtype=np.float64, count=len(feats))
    # simhash_hashes of both together; the content features, of one weight and
    # up to 10^5 of them, counted rather than weighed
    ones = bit_votes(hashes, weights) + CONTENT_WEIGHT * bit_votes(content)
    total = weights.sum() + CONTENT_WEIGHT * len(content)
    return FingerprintResult(_fingerprint_of_votes(ones, total), count, None)


def fingerprint(
    page: str | bytes | etree._Element,
    *,
    min_features: int = DEFAULT_MIN_FEATURES,
    seed: int = 0,
    encoding: str | None = None,
) -> int | None:
    """The simhash of a page's main text, or None when its text has fewer than
    ``min_features`` distinct spot signatures (a page of title, headings and
    code only is not fingerprinted). Never raises on page content."""
    return fingerprint_details(
        page, min_features=min_features, seed=seed, encoding=encoding
    ).fingerprint


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two fingerprints."""
    return (a ^ b).bit_count()


def hamming_many(a, b) -> np.ndarray:
    """Element-wise Hamming distances between ``uint64`` arrays (broadcast)."""
    a = np.asarray(a, dtype=np.uint64)
    b = np.asarray(b, dtype=np.uint64)
    return np.bitwise_count(np.bitwise_xor(a, b))
