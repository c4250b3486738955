"""The pure fingerprint pipeline: HTML page -> main text -> weighted features -> simhash.

``extract`` finds a page's main text on an lxml tree, ``features`` turns it
into weighted stopword-anchored spot signatures, ``simhash`` hashes them into
one 64-bit fingerprint. No name re-exported here is also a module's
name (``extract``, ``features``), so each stays importable as a module; the
``features()`` function is ``scrapy_simhash.features``. Nothing here imports Scrapy (``tests/test_package.py``
checks it).
"""

from scrapy_simhash.fingerprinting.extract import MainText, parse_html, plain_elements
from scrapy_simhash.fingerprinting.features import (
    PageFeatures,
    analyse_page,
    page_features,
    page_main_text,
)
from scrapy_simhash.fingerprinting.hashing import (
    DEFAULT_MIN_FEATURES,
    FINGERPRINT_VERSION,
    FingerprintResult,
    fingerprint,
    fingerprint_details,
    hamming,
    hamming_many,
    simhash,
)

__all__ = [
    "DEFAULT_MIN_FEATURES",
    "FINGERPRINT_VERSION",
    "FingerprintResult",
    "MainText",
    "PageFeatures",
    "analyse_page",
    "fingerprint",
    "fingerprint_details",
    "hamming",
    "hamming_many",
    "page_features",
    "page_main_text",
    "parse_html",
    "plain_elements",
    "simhash",
]
