"""The crawler's persisted state: ``JOBDIR/simhash.seen``, read in one place.

The file is a :class:`~scrapy_simhash.index.RecordLog` of ``(fingerprint,
row, payload)`` records whose JSON header names its format, the fingerprint
version, the sketch size and ``max_distance`` (the k of the crawl that created
it, read by the command line); a payload is the page's sketch
(:data:`~scrapy_simhash.fingerprinting.signature.SKETCH_BINS` bytes) followed by
its URL (UTF-8), or by the URL's :func:`~scrapy_simhash.backends.hashed_url`
when it is longer than :data:`MAX_URL_BYTES` (:func:`stored_url`), so that a
record is never too large to be written. The memory backend appends to it during a crawl; it and the command
line read it through :func:`read_state`, which refuses a file of another format
or fingerprint version, so fingerprints of different versions are never compared.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

from scrapy_simhash.backends import hashed_url
from scrapy_simhash.fingerprinting import FINGERPRINT_VERSION
from scrapy_simhash.fingerprinting.signature import SKETCH_BINS, Signature
from scrapy_simhash.index import LogContents, RecordLog

#: The state file's name inside JOBDIR.
STATE_FILE = "simhash.seen"
#: The ``format`` field of the state file's header.
STATE_FORMAT = "scrapy-simhash-seen"
#: Longest URL (UTF-8 bytes) a record keeps; a longer one is kept as its hash.
#: Far below the record log's largest payload, so every page can be written.
MAX_URL_BYTES = 1 << 16


def stored_url(url: str) -> bytes:
    """What a state record keeps of ``url``: its UTF-8, or its
    :func:`~scrapy_simhash.backends.hashed_url` past :data:`MAX_URL_BYTES`."""
    data = url.encode("utf-8", "surrogatepass")
    return data if len(data) <= MAX_URL_BYTES else hashed_url(url).encode("ascii")


class StateError(ValueError):
    """A state file of another format or fingerprint version; ``path`` names it."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(message)


class State(NamedTuple):
    """A crawl's persisted pages: fingerprints (``uint64``), and payloads of a
    sketch (:data:`SKETCH_BINS` bytes) and a URL (UTF-8) each."""

    path: str
    fingerprints: np.ndarray
    payloads: list[bytes]
    truncated: bool
    #: k of the crawl that created the file (its ``SIMHASH_MAX_DISTANCE``); None
    #: for files written before the header kept it
    max_distance: int | None = None

    @property
    def sketches(self) -> np.ndarray:
        """The sketches, one ``uint8`` row a page."""
        data = b"".join(bytes(p[:SKETCH_BINS]) for p in self.payloads)
        return np.frombuffer(data, dtype=np.uint8).reshape(-1, SKETCH_BINS)

    @property
    def url_bytes(self) -> list[bytes]:
        return [bytes(p[SKETCH_BINS:]) for p in self.payloads]

    @property
    def urls(self) -> list[str]:
        return [bytes(p[SKETCH_BINS:]).decode("utf-8", "replace") for p in self.payloads]

    def signatures(self) -> list[Signature]:
        """Each page's :class:`~scrapy_simhash.Signature`, in order."""
        return [
            Signature(int(fp), bytes(p[:SKETCH_BINS]))
            for fp, p in zip(self.fingerprints.tolist(), self.payloads)
        ]


def state_header(max_distance: int | None = None) -> dict:
    """The header a new state file is written with; ``max_distance``: the crawl's
    k, so that the command line decides at the k the crawl decided at."""
    header = {
        "format": STATE_FORMAT,
        "fingerprint_version": FINGERPRINT_VERSION,
        "sketch_bytes": SKETCH_BINS,
    }
    if max_distance is not None:
        header["max_distance"] = max_distance
    return header


def state_path(path: str | os.PathLike) -> str:
    """``path`` itself, or the state file inside it when it is a JOBDIR."""
    path = os.fspath(path)
    return os.path.join(path, STATE_FILE) if os.path.isdir(path) else path


def check_state(path: str, contents: LogContents) -> State:
    """The pages of parsed state ``contents``; :class:`StateError` when its
    header names another format or fingerprint version."""
    header = contents.header
    if not isinstance(header, dict) or header.get("format") != STATE_FORMAT:
        raise StateError(
            path,
            f"{path} is not a scrapy-simhash state file (header {header!r}); "
            "delete it or set SIMHASH_RESET=True",
        )
    version = header.get("fingerprint_version")
    if version != FINGERPRINT_VERSION:
        raise StateError(
            path,
            f"{path} holds fingerprints of version {version}, this scrapy-simhash "
            f"computes version {FINGERPRINT_VERSION}: they cannot be compared; "
            "delete the file or set SIMHASH_RESET=True to start empty",
        )
    sketch = header.get("sketch_bytes")
    if sketch != SKETCH_BINS:
        raise StateError(
            path,
            f"{path} holds sketches of {sketch} bytes, this scrapy-simhash uses "
            f"{SKETCH_BINS}: delete the file or set SIMHASH_RESET=True to start empty",
        )
    short = next((row for row, p in enumerate(contents.payloads) if len(p) < SKETCH_BINS), None)
    if short is not None:
        raise StateError(
            path,
            f"{path}: record {short} is shorter than a sketch ({SKETCH_BINS} bytes); "
            "delete the file or set SIMHASH_RESET=True to start empty",
        )
    fingerprints = np.asarray(contents.fingerprints, dtype=np.uint64)
    k = header.get("max_distance")
    k = k if isinstance(k, int) and not isinstance(k, bool) else None
    return State(path, fingerprints, contents.payloads, contents.truncated, k)


def read_state(path: str | os.PathLike) -> State:
    """Read a state file (or the one in a JOBDIR), format and version checked.

    Raises :class:`~scrapy_simhash.index.CorruptStateError` for a damaged file,
    :class:`StateError` for another format or version, ``OSError`` for I/O.
    """
    path = state_path(path)
    return check_state(path, RecordLog.read(path))
