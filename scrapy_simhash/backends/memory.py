"""The in-process backend: a :class:`~scrapy_simhash.index.SimhashIndex` plus URLs and sketches.

A candidate within k bits is a duplicate only when the sketches confirm it
(:func:`scrapy_simhash.fingerprinting.signature.confirms_many`, the drop decision of
:func:`~scrapy_simhash.is_duplicate`). A probe costs the same however many
stored pages share a fingerprint: at most :data:`FP_CAP` pages of one
fingerprint enter the tables, at most :data:`MAX_CANDIDATES` candidates are
confirmed, and exact copies of a page's own text are found through an index of
their own (so a copy is found even among thousands of pages that share its
fingerprint; a near copy there may be missed, never a distinct page dropped).
A crowded fingerprint's candidates (their sketches in one array) are kept
between its probes until a page within k bits enters the tables, so its next
probes skip the tables too (``bench/bench_probe.py``).
With a persist path
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

from scrapy_simhash.backends import BackendConfig, BackendError, Duplicate, PersistenceError
from scrapy_simhash.backends.state import StateError, check_state, state_header, stored_url
from scrapy_simhash.fingerprinting.signature import (
    SKETCH_BINS,
    Signature,
    confirms_many,
    exact_keys,
    sketch_keys,
)
from scrapy_simhash.index import CorruptStateError, RecordLog, SimhashIndex
from scrapy_simhash.index.tables import ADD_MODES

if TYPE_CHECKING:
    from scrapy_simhash.index import LogContents

logger = logging.getLogger(__name__)

#: Stored pages of one fingerprint that enter the tables at most (the others
#: are stored, and found as exact copies only).
FP_CAP = 64
#: Candidates a probe confirms at most, nearest first.
MAX_CANDIDATES = 256
#: Crowded fingerprints whose candidates are kept between probes, at most
#: (each up to MAX_CANDIDATES sketches: 24 KiB).
CROWDED_KEPT = 64


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
        self._exact = self._new_exact()
        self._urls = bytearray()
        self._offsets = np.zeros(1024, dtype=np.uint64)
        self._fps = np.zeros(1024, dtype=np.uint64)
        self._sketches = np.zeros((1024, SKETCH_BINS), dtype=np.uint8)
        self._count = 0
        self._log: Any = None
        #: Candidates the last probe confirmed (at most :data:`MAX_CANDIDATES`).
        self.last_candidates = 0
        self._crowded: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, int]] = {}

    @classmethod
    def from_config(cls, config: BackendConfig) -> MemoryBackend:
        return cls(
            k=config.max_distance,
            layout=config.layout,
            expected_size=config.expected_pages,
            persist_path=config.persist_path,
            reset=config.reset,
        )

    def _new_index(self) -> SimhashIndex:
        return SimhashIndex(k=self.k, layout=self.layout, expected_size=self.expected_size)

    def _new_exact(self) -> SimhashIndex:
        # Own texts by their exact key (signature.exact_keys): one table, k = 0.
        return SimhashIndex(k=0, layout="64", expected_size=self.expected_size)

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
        rows = np.arange(count, dtype=np.uint64)
        self._index = self._new_index()
        self._crowded = {}
        first = _first_of_each(fingerprints, FP_CAP)
        self._index.add_many(fingerprints[first], rows[first])
        self._exact = self._new_exact()
        exact = exact_keys(state.sketches)
        some = exact != 0
        self._exact.add_many(exact[some], np.broadcast_to(rows[:, None], exact.shape)[some])
        url_bytes = state.url_bytes
        lengths = np.fromiter(map(len, url_bytes), dtype=np.uint64, count=count)
        self._offsets = np.zeros(max(1024, 2 * count + 1), dtype=np.uint64)
        np.cumsum(lengths, out=self._offsets[1 : count + 1])
        self._urls = bytearray(b"".join(url_bytes))
        self._fps = np.zeros(max(1024, 2 * count + 1), dtype=np.uint64)
        self._fps[:count] = fingerprints
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
        rows, distances, sketches, same = self._candidates(fingerprint)
        found = None
        self.last_candidates = len(rows)
        if len(rows):
            # the probe as one row, compared with every candidate
            ok = confirms_many(sketches, np.frombuffer(signature.sketch, np.uint8))
            best = int(ok.argmax())
            if ok[best]:
                found = (int(rows[best]), int(distances[best]))
        exact = [key for key in sketch_keys(signature.sketch) if key]
        for key in exact if found is None else ():
            # An exact copy, wherever it is stored.
            rows = self._exact.keys_at(key, MAX_CANDIDATES).astype(np.intp)
            if len(rows):
                near = np.bitwise_count(self._fps[rows] ^ np.uint64(fingerprint))
                best = int(near.argmin())
                if near[best] <= self.k:
                    found = (int(rows[best]), int(near[best]))
                    break
        if add == "always" or (add == "if_new" and found is None):
            row_id = self._count
            if same < FP_CAP:
                self._index.add(fingerprint, row_id)
                if self._crowded:
                    self._forget_near(fingerprint)
            for key in exact:
                self._exact.add(key, row_id)
            data = stored_url(url)  # as the state file keeps it, live or resumed
            self._store(fingerprint, data, signature.sketch)
            if self._log is not None:
                try:
                    self._log.append(fingerprint, row_id, signature.sketch + data)
                except Exception as exc:  # a full disk, a closed log...: the page is kept
                    raise PersistenceError(
                        f"Cannot append to the simhash state file {self.persist_path}: {exc}"
                    ) from exc
        if found is None:
            return None
        key, distance = found
        return Duplicate(self.url(key), int(self._fps[key]), distance)

    def _candidates(self, fingerprint: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """What the tables give a probe: the candidates' rows (nearest first,
        at most :data:`MAX_CANDIDATES`), distances and sketches (one
        contiguous array), and how many pages in the tables hold the
        fingerprint itself. A crowded fingerprint's (:data:`FP_CAP` pages)
        are kept for its next probes, until a page within k bits of it
        enters the tables (:meth:`_forget_near`): the same answer, without
        probing the tables or gathering sketches again."""
        cached = self._crowded.get(fingerprint)
        if cached is not None:
            return cached
        keys, distances, same = self._index.query_keys(fingerprint, MAX_CANDIDATES)
        rows = keys.astype(np.intp)
        found = (rows, distances, self._sketches[rows], same)
        if same >= FP_CAP:
            if len(self._crowded) >= CROWDED_KEPT:
                del self._crowded[next(iter(self._crowded))]  # the oldest
            self._crowded[fingerprint] = found
        return found

    def _forget_near(self, fingerprint: int) -> None:
        """Drop the kept candidates of crowded fingerprints within k bits of
        one that just entered the tables (their probes now find it too)."""
        k, fingerprint = self.k, int(fingerprint)
        for crowded in [f for f in self._crowded if (int(f) ^ fingerprint).bit_count() <= k]:
            del self._crowded[crowded]

    def _store(self, fingerprint: int, data: bytes, sketch: bytes) -> None:
        count = self._count
        if count + 2 > len(self._offsets):
            grown = np.zeros(2 * len(self._offsets), dtype=np.uint64)
            grown[: count + 1] = self._offsets[: count + 1]
            self._offsets = grown
            fps = np.zeros(len(grown), dtype=np.uint64)
            fps[:count] = self._fps[:count]
            self._fps = fps
        if count + 1 > len(self._sketches):
            sketches = np.zeros((2 * len(self._sketches), SKETCH_BINS), dtype=np.uint8)
            sketches[:count] = self._sketches[:count]
            self._sketches = sketches
        self._sketches[count] = np.frombuffer(sketch, dtype=np.uint8)
        self._fps[count] = fingerprint
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



def _first_of_each(values: np.ndarray, cap: int) -> np.ndarray:
    """Positions of the first ``cap`` occurrences of each value, in order."""
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
    rank = np.arange(len(values)) - np.repeat(starts, np.diff(np.r_[starts, len(values)]))
    return np.sort(order[rank < cap])
