"""PLACEHOLDER (the fingerprint helper replaces this file): whole-text 3-word shingles."""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping

import numpy as np
import xxhash
import lxml.html

FINGERPRINT_VERSION = 0
DEFAULT_MIN_FEATURES = 6
_BITS = np.arange(64, dtype=np.uint64)


def features(page, *, encoding=None) -> dict[str, float]:
    if isinstance(page, (str, bytes)):
        if not page.strip():
            return {}
        root = lxml.html.document_fromstring(page)
    else:
        root = page
    text = " ".join(root.itertext())
    tokens = re.findall(r"[^\W\d_]+", text.lower())
    return dict(Counter(" ".join(tokens[i : i + 3]) for i in range(len(tokens) - 2)))


def simhash(weighted_features: Mapping[str, float] | Iterable[tuple[str, float]], *, seed=0) -> int:
    items = list(weighted_features.items() if isinstance(weighted_features, Mapping) else weighted_features)
    if not items:
        return 0
    h = np.array([xxhash.xxh3_64_intdigest(f.encode(), seed) for f, _ in items], dtype=np.uint64)
    w = np.array([w for _, w in items], dtype=np.float64)
    bits = ((h[:, None] >> _BITS) & np.uint64(1)).astype(np.float64)
    sums = (w[:, None] * (2 * bits - 1)).sum(axis=0)
    return int(((sums > 0).astype(np.uint64) << _BITS).sum())


def fingerprint(page, *, min_features=DEFAULT_MIN_FEATURES, seed=0, encoding=None) -> int | None:
    f = features(page, encoding=encoding)
    return simhash(f, seed=seed) if len(f) >= min_features else None


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


def hamming_many(a, b) -> np.ndarray:
    return np.bitwise_count(np.bitwise_xor(np.asarray(a, np.uint64), np.asarray(b, np.uint64)))
