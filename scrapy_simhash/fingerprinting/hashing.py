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
FINGERPRINT_VERSION = 7
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


def simhash_hashes(hashes: np.ndarray, weights: np.ndarray) -> int:
    """The 64-bit simhash of features given as their ``uint64`` hashes and
    weights (what :func:`simhash` computes once the features are hashed)."""
    if not len(hashes):
        return 0
    h = np.ascontiguousarray(hashes, dtype=_LE_U64)
    w = np.asarray(weights, dtype=np.float64)
    # bits[i, j] = bit j of hash i (little-endian bytes, little bit order).
    bits = np.unpackbits(h.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    ones = w @ bits  # weight voting for 1, per bit
    votes = (2.0 * ones > w.sum()).astype(np.uint8)
    return int(np.packbits(votes, bitorder="little").view(_LE_U64)[0])


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
    content = np.unique(content)
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
    return FingerprintResult(
        simhash_hashes(
            np.concatenate([hashes, content]),
            np.concatenate([weights, np.full(len(content), CONTENT_WEIGHT)]),
        ),
        count,
        None,
    )


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
