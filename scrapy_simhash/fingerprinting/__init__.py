"""The pure fingerprint pipeline: HTML page -> main text -> weighted features -> simhash.

``extract`` finds a page's main text on an lxml tree, ``features`` turns it
into weighted stopword-anchored spot signatures and content features,
``hashing`` hashes them into one 64-bit fingerprint, ``signature`` adds the
sketch that confirms a drop and holds the drop decision (``is_duplicate``).
No name re-exported here is also a module's name (``extract``, ``features``,
``signature``), so each stays importable as a module; the ``features()`` and
``signature()`` functions are ``scrapy_simhash.features`` and
``scrapy_simhash.signature``. Nothing here imports Scrapy
(``tests/test_package.py`` checks it).
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
from scrapy_simhash.fingerprinting.signature import (
    DEFAULT_MAX_DISTANCE,
    Signature,
    is_duplicate,
)

__all__ = [
    "DEFAULT_MAX_DISTANCE",
    "DEFAULT_MIN_FEATURES",
    "FINGERPRINT_VERSION",
    "FingerprintResult",
    "MainText",
    "PageFeatures",
    "Signature",
    "analyse_page",
    "fingerprint",
    "fingerprint_details",
    "hamming",
    "hamming_many",
    "is_duplicate",
    "page_features",
    "page_main_text",
    "parse_html",
    "plain_elements",
    "simhash",
]
