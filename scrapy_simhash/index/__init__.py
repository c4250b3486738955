"""The Hamming-distance index: every stored 64-bit fingerprint within k bits.

``layout`` plans the permuted tables (Manku et al. 2007, §3), ``tables`` is the
in-memory index itself, ``snapshot`` saves and loads it, ``store`` is the
append-only record log both the index and the crawler's JOBDIR state use.
Nothing here imports Scrapy.
"""

from scrapy_simhash.index.layout import TableLayout
from scrapy_simhash.index.store import (
    CorruptStateError, LogContents, LogLockedError, RecordLog, SalvageReport, salvage,
)
from scrapy_simhash.index.tables import ADD_MODES, BatchMatches, Match, SimhashIndex

__all__ = [
    "ADD_MODES",
    "BatchMatches",
    "CorruptStateError",
    "LogContents",
    "LogLockedError",
    "Match",
    "RecordLog",
    "SalvageReport",
    "SimhashIndex",
    "TableLayout",
    "salvage",
]
