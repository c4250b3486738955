"""Near-duplicate page detection for Scrapy with simhash fingerprints.

The fingerprint functions are imported eagerly: the function ``fingerprint``
was once also a module name, and binding the
function here first keeps a later import of the module from shadowing it.
Everything else is imported lazily, so the pure algorithms never import Scrapy.
"""

from __future__ import annotations

import importlib
from typing import Any

from scrapy_simhash.fingerprinting.hashing import (
    FINGERPRINT_VERSION,
    FingerprintResult,
    features,
    fingerprint,
    fingerprint_details,
    hamming,
    hamming_many,
    simhash,
)
from scrapy_simhash.fingerprinting.signature import Signature, is_duplicate, signature

__version__ = "0.1.0"

_EXPORTS = {
    # index (pure, no Scrapy)
    "TableLayout": "scrapy_simhash.index",
    "SimhashIndex": "scrapy_simhash.index",
    # Scrapy layer
    "SimhashMiddleware": "scrapy_simhash.middleware",
    "NearDuplicate": "scrapy_simhash.middleware",
    "Addon": "scrapy_simhash.addon",
    "UrlRulesMiddleware": "scrapy_simhash.downloadermiddleware",
    "SkippedByRule": "scrapy_simhash.downloadermiddleware",
}

__all__ = [
    "FINGERPRINT_VERSION",
    "FingerprintResult",
    "Signature",
    "__version__",
    "features",
    "fingerprint",
    "fingerprint_details",
    "hamming",
    "hamming_many",
    "is_duplicate",
    "signature",
    "simhash",
    *_EXPORTS,
]


def __getattr__(name: str) -> Any:
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
