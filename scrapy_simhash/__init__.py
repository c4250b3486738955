"""Near-duplicate page detection for Scrapy with simhash fingerprints.

Public names are imported lazily so that ``import scrapy_simhash`` stays cheap
and the pure algorithms can be used without importing Scrapy.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    # fingerprint pipeline (pure, no Scrapy)
    "FINGERPRINT_VERSION": "scrapy_simhash.fingerprint",
    "fingerprint": "scrapy_simhash.fingerprint",
    "features": "scrapy_simhash.fingerprint",
    "simhash": "scrapy_simhash.fingerprint",
    "hamming": "scrapy_simhash.fingerprint",
    "hamming_many": "scrapy_simhash.fingerprint",
    # index (pure, no Scrapy)
    "TableLayout": "scrapy_simhash.layout",
    "SimhashIndex": "scrapy_simhash.index",
    # Scrapy layer
    "SimhashMiddleware": "scrapy_simhash.middleware",
    "NearDuplicate": "scrapy_simhash.middleware",
    "Addon": "scrapy_simhash.addon",
}

__all__ = ["__version__", *_EXPORTS]


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
