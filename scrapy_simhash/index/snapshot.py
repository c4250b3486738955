"""Persistence of a :class:`~scrapy_simhash.index.SimhashIndex`: a snapshot
file plus a :class:`~scrapy_simhash.index.store.RecordLog` of the changes since.

``SimhashIndex.save``, ``SimhashIndex.load`` and ``SimhashIndex.open`` call
:func:`save`, :func:`load` and :func:`open_index`; the index itself only knows
that an open index has a log it appends each add (empty payload) and remove
(payload ``b"-"``) to. The log lives at ``path + ".log"``.

Snapshot format, version 1, little-endian::

    magic b"SIMHIDX\\0" | u32 version | u32 header_len | u32 crc32(header) | u32 0
    header: UTF-8 JSON {"format", "version", "k", "layout", "compress",
            "fingerprint_version", "count", "crc32" (of the array bytes),
            "snapshot_id", "arrays": ["fingerprints", "keys"]}
    zero padding to a multiple of 8, then count u64 fingerprints, count u64 keys

written to a temporary file, fsynced and renamed over ``path`` (the tables
are rebuilt on load, ~0.2 s a million entries). The log's header names the
``snapshot_id`` it follows; a log left from an older snapshot (a crash between
the rename and the log reset) is already inside the snapshot and is ignored.
Nothing here imports Scrapy.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import uuid
import zlib
from typing import Any, Protocol

import numpy as np

from scrapy_simhash.index.layout import TableLayout
from scrapy_simhash.index.store import CorruptStateError, LogContents, RecordLog

class SimhashIndex(Protocol):
    """What saving and loading need of an index
    (:class:`scrapy_simhash.index.tables.SimhashIndex`, which calls them): this
    module never imports it."""

    k: int
    layout: TableLayout
    compress: bool
    fingerprint_version: int | None
    _log: RecordLog | None
    _path: str | None

    def __init__(self, k: int, layout: Any, expected_size: int, compress: bool,
                 **kwargs: Any) -> None: ...
    def entries(self) -> tuple[np.ndarray, np.ndarray]: ...
    def _add_arrays(self, fps: np.ndarray, keys: np.ndarray) -> None: ...
    def _remove(self, key: int) -> bool: ...

logger = logging.getLogger(__name__)

SNAPSHOT_MAGIC = b"SIMHIDX\x00"
SNAPSHOT_VERSION = 1
#: The payload of a log record that removes its key.
REMOVE = b"-"
_PREAMBLE = struct.Struct("<8sIIII")


def log_path(path: str) -> str:
    """Where the log following the snapshot ``path`` lives."""
    return path + ".log"


def _log_header(index: SimhashIndex, snapshot_id: str | None) -> dict:
    return {"format": "scrapy-simhash index log", "snapshot_id": snapshot_id, "k": index.k,
            "fingerprint_version": index.fingerprint_version}


def save(index: SimhashIndex, path) -> None:
    """Write ``index`` as a snapshot at ``path`` atomically (temporary file,
    fsync, rename); if ``index`` was opened at ``path``, restart its log so it
    follows the new snapshot."""
    path = os.fspath(path)
    fps, keys = index.entries()
    fps, keys = fps.astype("<u8", copy=False), keys.astype("<u8", copy=False)
    crc = zlib.crc32(keys.tobytes(), zlib.crc32(fps.tobytes()))
    snapshot_id = uuid.uuid4().hex
    header = json.dumps({
        "format": "scrapy-simhash index", "version": SNAPSHOT_VERSION, "k": index.k,
        "layout": index.layout.to_dict(), "compress": index.compress,
        "fingerprint_version": index.fingerprint_version, "count": len(fps), "crc32": crc,
        "snapshot_id": snapshot_id, "arrays": ["fingerprints", "keys"],
    }, sort_keys=True).encode()
    pre = _PREAMBLE.pack(SNAPSHOT_MAGIC, SNAPSHOT_VERSION, len(header), zlib.crc32(header), 0)
    pad = b"\x00" * (-(len(pre) + len(header)) % 8)
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as stream:
            stream.write(pre + header + pad)
            stream.write(fps.tobytes())
            stream.write(keys.tobytes())
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    log = index._log
    if log is not None and index._path == path:
        log.reset(_log_header(index, snapshot_id))


def read(path) -> tuple[dict, np.ndarray, np.ndarray]:
    """A snapshot's header, fingerprints and keys; :class:`CorruptStateError`
    naming the file and offset for anything that does not check."""
    path = os.fspath(path)
    with open(path, "rb") as stream:
        data = stream.read()
    if len(data) < _PREAMBLE.size:
        raise CorruptStateError(path, 0, "shorter than the snapshot header")
    magic, version, hlen, hcrc, _ = _PREAMBLE.unpack_from(data, 0)
    if magic != SNAPSHOT_MAGIC:
        raise CorruptStateError(path, 0, f"not a simhash index snapshot (magic {magic!r})")
    if version != SNAPSHOT_VERSION:
        raise CorruptStateError(path, 8, f"unknown snapshot version {version}")
    raw = data[_PREAMBLE.size:_PREAMBLE.size + hlen]
    if len(raw) != hlen or zlib.crc32(raw) != hcrc:
        raise CorruptStateError(path, _PREAMBLE.size, "bad JSON header (checksum mismatch)")
    try:
        header = json.loads(raw)
        count = int(header["count"])
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptStateError(path, _PREAMBLE.size, f"bad JSON header: {exc}") from None
    start = _PREAMBLE.size + hlen
    start += -start % 8
    if len(data) != start + 16 * count:
        raise CorruptStateError(
            path, start, f"expected {count} entries, file size {len(data)}")
    fps = np.frombuffer(data, dtype="<u8", count=count, offset=start)
    keys = np.frombuffer(data, dtype="<u8", count=count, offset=start + 8 * count)
    if zlib.crc32(keys.tobytes(), zlib.crc32(fps.tobytes())) != header.get("crc32"):
        raise CorruptStateError(path, start, "array checksum mismatch")
    return header, fps.astype(np.uint64), keys.astype(np.uint64)


def _from_snapshot(cls: type[SimhashIndex], path: str,
                   layout: Any = None) -> tuple[SimhashIndex, str | None]:
    """The index a snapshot holds (without its log) and the snapshot's id."""
    header, fps, keys = read(path)
    try:
        lay = TableLayout.from_dict(header["layout"]) if layout is None else layout
        index = cls(k=header["k"], layout=lay, compress=header.get("compress", False),
                    fingerprint_version=header.get("fingerprint_version"))
    except (KeyError, ValueError, TypeError) as exc:
        raise CorruptStateError(path, None, f"bad layout in header: {exc}") from None
    index._add_arrays(fps, keys)
    return index, header.get("snapshot_id")


def replay(index: SimhashIndex, log: LogContents, path: str, snapshot_id: str | None) -> bool:
    """Apply a log's records to ``index`` (without logging them again); False,
    and nothing applied, when the log follows another snapshot."""
    if log.header.get("snapshot_id") != snapshot_id:
        logger.warning("Ignored %(log)s: it precedes the snapshot it sits next to",
                       {"log": path})
        return False
    if log.truncated:
        logger.warning("Ignored a truncated last record in %(log)s", {"log": path})
    # runs of adds go in as arrays; removes one by one, in order
    is_remove = np.fromiter((p == REMOVE for p in log.payloads), dtype=bool,
                            count=len(log.payloads))
    start = 0
    for r in [*np.flatnonzero(is_remove).tolist(), len(is_remove)]:
        if r > start:
            index._add_arrays(log.fingerprints[start:r], log.keys[start:r])
        if r < len(is_remove):
            index._remove(int(log.keys[r]))
        start = r + 1
    return True


def load(cls: type[SimhashIndex], path, *, layout: Any = None) -> SimhashIndex:
    """Read a snapshot and replay the log that follows it."""
    path = os.fspath(path)
    index, snapshot_id = _from_snapshot(cls, path, layout)
    logged = log_path(path)
    if os.path.exists(logged) and os.path.getsize(logged) > 0:
        replay(index, RecordLog.read(logged), logged, snapshot_id)
    return index


def open_index(cls: type[SimhashIndex], path, k: int, layout: Any, expected_size: int,
               compress: bool, *, reset: bool = False,
               fingerprint_version: int | None = None) -> SimhashIndex:
    """An index persisted at ``path`` (see :meth:`SimhashIndex.open`)."""
    path = os.fspath(path)
    logged = log_path(path)
    if reset or not os.path.exists(path):
        index = cls(k, layout, expected_size, compress,
                    fingerprint_version=fingerprint_version)
        snapshot_id = None
    else:
        index, snapshot_id = _from_snapshot(cls, path)
        if index.k != k:
            raise ValueError(f"{path} holds an index for k={index.k}, not k={k}")
    # the log's lock first: a reset must not delete files another writer uses
    log = RecordLog.open(logged, _log_header(index, snapshot_id), reset=reset)
    try:
        if reset and os.path.exists(path):
            os.unlink(path)
        if not reset and not replay(index, log.contents, logged, snapshot_id):
            log.reset(_log_header(index, snapshot_id))
    except BaseException:
        log.close()
        raise
    index._path, index._log = path, log
    return index
