"""The in-process backend: a :class:`~scrapy_simhash.index.SimhashIndex` plus URLs and sketches.

A candidate within k bits is a duplicate only when the sketches confirm it
(:func:`scrapy_simhash.fingerprinting.signature.confirms`, the drop decision of
:func:`~scrapy_simhash.is_duplicate`). With a persist path
(``JOBDIR/simhash.seen`` by default) every added page is appended to the state
file (:mod:`scrapy_simhash.backends.state`), so a paused or crashed crawl
resumes with its index.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from scrapy_simhash.backends import BackendError, Duplicate, PersistenceError
from scrapy_simhash.backends.state import StateError, check_state, state_header
from scrapy_simhash.fingerprinting.signature import SKETCH_BINS, Signature, confirms
from scrapy_simhash.index import CorruptStateError, RecordLog, SimhashIndex, TableLayout
from scrapy_simhash.index.tables import ADD_MODES

if TYPE_CHECKING:
    from scrapy_simhash.index import LogContents
    from scrapy_simhash.settings import SimhashSettings

logger = logging.getLogger(__name__)


class MemoryBackend:
    """An in-process permuted-tables index plus a compact URL and sketch store.

    URLs are kept outside the index, UTF-8 in one ``bytearray`` with ``uint64``
    offsets, sketches in one ``uint8`` array of a row each; the index key of a
    page is its row number.
    """

    def __init__(
        self,
        k: int = 3,
        layout: Any = "auto",
        expected_size: int = 1 << 20,
        persist_path: str | None = None,
        reset: bool = False,
    ) -> None:
        self.k = k
        self.layout = layout
        self.expected_size = expected_size
        self.persist_path = persist_path
        self.reset = reset
        self._index = self._new_index()
        self._urls = bytearray()
        self._offsets = np.zeros(1024, dtype=np.uint64)
        self._sketches = np.zeros((1024, SKETCH_BINS), dtype=np.uint8)
        self._count = 0
        self._log: Any = None

    @classmethod
    def from_config(cls, config: SimhashSettings) -> MemoryBackend:
        return cls(
            k=config.max_distance,
            layout=config.layout,
            expected_size=config.expected_pages,
            persist_path=config.persist_path,
            reset=config.reset,
        )

    def _new_index(self) -> SimhashIndex:
        return SimhashIndex(k=self.k, layout=self.layout, expected_size=self.expected_size)

    def __len__(self) -> int:
        return self._count

    def open(self, spider_name: str) -> int:
        """Load the persisted state (unless reset) and start appending to it."""
        if self.persist_path is None:
            return self._count
        path = self.persist_path
        header = state_header(self.k)
        try:
            directory = os.path.dirname(path)
            if directory:
                os.makedirs(directory, exist_ok=True)
            exists = os.path.exists(path) and os.path.getsize(path) > 0
            log = RecordLog.open(path, header, reset=self.reset)
            if exists and not self.reset:
                stored_k = log.header.get("max_distance", self.k)
                if stored_k != self.k:
                    logger.warning(
                        "The simhash state %(path)s was started with SIMHASH_MAX_DISTANCE "
                        "%(stored)s; this crawl uses %(k)d (the command line reads the "
                        "state at %(stored)s unless given --distance)",
                        {"path": path, "stored": stored_k, "k": self.k},
                    )
                try:
                    self._load(path, log.contents)
                except BackendError:
                    log.close()
                    raise
            self._log = log
        except CorruptStateError as exc:
            raise BackendError(
                f"{exc}; delete the file or set SIMHASH_RESET=True to start empty"
            ) from exc
        except OSError as exc:
            raise BackendError(f"Cannot open the simhash state file {path}: {exc}") from exc
        return self._count

    def _load(self, path: str, contents: LogContents) -> None:
        start = time.perf_counter()
        try:
            state = check_state(path, contents)
        except StateError as exc:
            raise BackendError(str(exc)) from exc
        # A truncated last record (a crash mid-write) was cut off by
        # RecordLog.open, which logged it.
        fingerprints = state.fingerprints
        count = len(fingerprints)
        self._index = self._new_index()
        self._index.add_many(fingerprints, np.arange(count, dtype=np.uint64))
        url_bytes = state.url_bytes
        lengths = np.fromiter(map(len, url_bytes), dtype=np.uint64, count=count)
        self._offsets = np.zeros(max(1024, 2 * count + 1), dtype=np.uint64)
        np.cumsum(lengths, out=self._offsets[1 : count + 1])
        self._urls = bytearray(b"".join(url_bytes))
        self._sketches = np.zeros((max(1024, 2 * count + 1), SKETCH_BINS), dtype=np.uint8)
        self._sketches[:count] = state.sketches
        self._count = count
        logger.info(
            "Loaded %(count)d fingerprints from %(path)s in %(seconds).3f s",
            {"count": count, "path": path, "seconds": time.perf_counter() - start},
        )

    def url(self, row: int) -> str:
        """The URL stored for an index key."""
        return self._urls[int(self._offsets[row]) : int(self._offsets[row + 1])].decode(
            "utf-8", "replace"
        )

    def query_and_add(
        self, signature: Signature, url: str, *, add: str = "if_new"
    ) -> Duplicate | None:
        """The nearest stored page within k bits whose sketch confirms it (the
        drop decision); store this one per ``add`` (``if_new``: when no
        candidate was confirmed)."""
        fingerprint = signature.fingerprint
        if len(signature.sketch) != SKETCH_BINS:
            raise ValueError(
                f"a sketch has {SKETCH_BINS} bytes, this one {len(signature.sketch)}"
            )
        if add not in ADD_MODES:
            raise ValueError(f"add must be one of {ADD_MODES}, got {add!r}")
        candidates = self._index.query(fingerprint)
        sketches = self._sketches
        confirmed = [m for m in candidates if confirms(sketches[m.key].tobytes(), signature.sketch)]
        if add == "always" or (add == "if_new" and not confirmed):
            row = self._count
            self._index.add(fingerprint, row)
            data = url.encode("utf-8")
            self._store(data, signature.sketch)
            if self._log is not None:
                try:
                    self._log.append(fingerprint, row, signature.sketch + data)
                except OSError as exc:
                    raise PersistenceError(
                        f"Cannot append to the simhash state file {self.persist_path}: {exc}"
                    ) from exc
        if not confirmed:
            return None
        best = confirmed[0]  # sorted by (distance, key)
        return Duplicate(self.url(best.key), best.fingerprint, best.distance)

    def _store(self, data: bytes, sketch: bytes) -> None:
        count = self._count
        if count + 2 > len(self._offsets):
            grown = np.zeros(2 * len(self._offsets), dtype=np.uint64)
            grown[: count + 1] = self._offsets[: count + 1]
            self._offsets = grown
        if count + 1 > len(self._sketches):
            sketches = np.zeros((2 * len(self._sketches), SKETCH_BINS), dtype=np.uint8)
            sketches[:count] = self._sketches[:count]
            self._sketches = sketches
        self._sketches[count] = np.frombuffer(sketch, dtype=np.uint8)
        self._urls += data
        self._count = count + 1
        self._offsets[self._count] = len(self._urls)

    def close(self) -> None:
        if self._log is not None:
            log, self._log = self._log, None
            try:
                log.close()
            except OSError as exc:
                raise BackendError(
                    f"Cannot close the simhash state file {self.persist_path}: {exc}"
                ) from exc

    def stats(self) -> dict[str, int]:
        """No counters of its own: the middleware's stats say it all."""
        return {}

