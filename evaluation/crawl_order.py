"""A site's pages signed as a crawl signs them, in the order it meets them.

Each page is signed against its site's template as learned from the pages kept
before it: a page the drop decision joins to a kept one is dropped, and teaches
the template nothing (as :class:`~scrapy_simhash.middleware.SimhashMiddleware`
learns only what it keeps). The property test of the first rule
(``tests/test_safety.py``) and the held-out check (``bench.unseen_sites``)
read their pairs from these signatures.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from evaluation.wrong_text import wrong_main
from scrapy_simhash.fingerprinting.features import read_page
from scrapy_simhash.fingerprinting.hashing import DEFAULT_MIN_FEATURES
from scrapy_simhash.fingerprinting.signature import (
    DEFAULT_MAX_DISTANCE,
    SKETCH_BINS,
    Signature,
    confirms_many,
    sign,
)
from scrapy_simhash.fingerprinting.template import SiteTemplate

__all__ = ["crawl_order"]


def crawl_order(
    pages: Iterable[bytes | str], wrong: str | None = None, *, min_features: int | None = None
) -> list[Signature | None]:
    """Each page's signature (None without a fingerprint), in order. ``wrong``:
    each page's main text forced to that wrong text first
    (:func:`~evaluation.wrong_text.wrong_main`); ``min_features``: the
    fingerprint's (by default the package's as read, one with a wrong text:
    a short wrong text gets a fingerprint too, the harsher test)."""
    if min_features is None:
        min_features = DEFAULT_MIN_FEATURES if wrong is None else 1
    template = SiteTemplate()
    # the kept pages' fingerprints and sketches: rows [:kept] of buffers that double
    fps = np.empty(64, dtype=np.uint64)
    sketches = np.empty((64, SKETCH_BINS), dtype=np.uint8)
    kept = 0
    out: list[Signature | None] = []
    for data in pages:
        page, tokens = read_page(data)
        if wrong is not None:
            page, tokens = wrong_main(page, wrong), None
        found = sign(page, tokens, template=template, min_features=min_features, body=data)
        sig = found.signature
        if sig is None or not _joined(sig, fps[:kept], sketches[:kept]):
            template.learn(found.evidence.block_hashes)
            if sig is not None:
                if kept == len(fps):
                    fps = np.concatenate([fps, np.empty_like(fps)])
                    sketches = np.concatenate([sketches, np.empty_like(sketches)])
                fps[kept] = sig.fingerprint
                sketches[kept] = np.frombuffer(sig.sketch, np.uint8)
                kept += 1
        out.append(sig)
    return out


def _joined(sig: Signature, fps: np.ndarray, sketches: np.ndarray) -> bool:
    """Whether the decision joins ``sig`` to a kept page."""
    near = np.flatnonzero(np.bitwise_count(fps ^ np.uint64(sig.fingerprint)) <= DEFAULT_MAX_DISTANCE)
    if not len(near):
        return False
    return bool(confirms_many(sketches[near], np.frombuffer(sig.sketch, np.uint8)).any())
