"""Append-only record log of ``(fingerprint, key, payload)``.

A crawl (or an index opened with a log) appends one record per page with one
``write`` and a flush, so a crash loses at most the record being written.

File format, version 1, all integers little-endian::

    magic        8 bytes   b"SIMHLOG\\0"
    version      u32       1
    header_len   u32       length of the JSON header in bytes
    header_crc   u32       CRC-32 of the JSON header bytes
    header       header_len bytes of UTF-8 JSON (an object)
    records, each:
        payload_len  u32
        fingerprint  u64
        key          u64
        payload      payload_len bytes
        crc          u32   CRC-32 of the 20 + payload_len bytes before it

Reading tolerates a truncated last record (``truncated=True``), including a
last record whose checksum fails because it was only partly written. A bad
magic, an unknown version, a bad header, a bad checksum before the last record
or an impossible length raise :class:`CorruptStateError` naming the file and
the byte offset. Nothing here imports Scrapy.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import zlib
from typing import Any, BinaryIO, NamedTuple

import numpy as np

logger = logging.getLogger(__name__)

MAGIC = b"SIMHLOG\x00"
VERSION = 1
#: Largest payload a record may carry; a larger length is corruption.
MAX_PAYLOAD = 1 << 20

_PREAMBLE = struct.Struct("<8sIII")
_RECORD = struct.Struct("<IQQ")
_CRC = struct.Struct("<I")
_U64 = 1 << 64


class CorruptStateError(ValueError):
    """A state file that cannot be trusted; ``path``, ``offset``, ``reason``."""

    def __init__(self, path, offset: int | None, reason: str):
        self.path = os.fspath(path)
        self.offset = offset
        self.reason = reason
        where = "" if offset is None else f" at byte {offset}"
        super().__init__(f"Corrupt simhash state file {self.path}{where}: {reason}")


class LogContents(NamedTuple):
    header: dict
    fingerprints: np.ndarray
    keys: np.ndarray
    payloads: list
    truncated: bool


def _encode_header(path, header: dict) -> bytes:
    if not isinstance(header, dict):
        raise TypeError(
            f"the header of {os.fspath(path)} must be a dict, got {type(header).__name__}")
    data = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    return _PREAMBLE.pack(MAGIC, VERSION, len(data), zlib.crc32(data)) + data


def _record(fingerprint: int, key: int, payload: bytes) -> bytes:
    fingerprint, key = int(fingerprint), int(key)
    if not (0 <= fingerprint < _U64 and 0 <= key < _U64):
        raise ValueError(
            f"fingerprint and key must be unsigned 64-bit integers, got {fingerprint}, {key}")
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}")
    body = _RECORD.pack(len(payload), fingerprint, key) + payload
    return body + _CRC.pack(zlib.crc32(body))


def _parse(path, data: bytes) -> tuple[LogContents, int]:
    """Parse a whole file; return the contents and the end of the last good record."""
    if len(data) < _PREAMBLE.size:
        raise CorruptStateError(path, 0, "shorter than the file header")
    magic, version, hlen, hcrc = _PREAMBLE.unpack_from(data, 0)
    if magic != MAGIC:
        raise CorruptStateError(path, 0, f"not a simhash record log (magic {magic!r})")
    if version != VERSION:
        raise CorruptStateError(
            path, 8, f"unknown format version {version} (this code reads {VERSION})")
    pos = _PREAMBLE.size
    raw = data[pos:pos + hlen]
    if len(raw) != hlen or zlib.crc32(raw) != hcrc:
        raise CorruptStateError(path, pos, "bad JSON header (truncated or checksum mismatch)")
    try:
        header = json.loads(raw)
    except ValueError as exc:
        raise CorruptStateError(path, pos, f"bad JSON header: {exc}") from None
    if not isinstance(header, dict):
        raise CorruptStateError(path, pos, "the JSON header is not an object")
    pos += hlen
    fps: list[int] = []
    keys: list[int] = []
    payloads: list[bytes] = []
    truncated = False
    size = len(data)
    unpack, crc32 = _RECORD.unpack_from, zlib.crc32
    view = memoryview(data)
    while pos < size:
        if size - pos < _RECORD.size:
            truncated = True
            break
        length, fp, key = unpack(data, pos)
        if length > MAX_PAYLOAD:
            raise CorruptStateError(path, pos, f"impossible record length {length}")
        end = pos + _RECORD.size + length
        if end + 4 > size:
            truncated = True
            break
        if crc32(view[pos:end]) != _CRC.unpack_from(data, end)[0]:
            if end + 4 == size:  # a torn last write
                truncated = True
                break
            raise CorruptStateError(path, pos, "record checksum mismatch")
        fps.append(fp)
        keys.append(key)
        payloads.append(data[pos + _RECORD.size:end])
        pos = end + 4
    contents = LogContents(
        header, np.array(fps, dtype=np.uint64), np.array(keys, dtype=np.uint64), payloads,
        truncated,
    )
    return contents, pos


class RecordLog:
    """An open log, appending one flushed record per :meth:`append`.

    ``contents`` holds the records the file had when it was opened (parsed once,
    as opening must find the end of the last intact record anyway), so callers
    load a log and append to it without reading it twice.
    """

    def __init__(self, path, stream: BinaryIO, contents: LogContents):
        self.path = os.fspath(path)
        self.header = contents.header
        self.contents = contents
        self._stream = stream

    @classmethod
    def open(cls, path, header: dict, *, reset: bool = False) -> RecordLog:
        """Open for appending; create with ``header`` if missing/empty or reset.
        If the file has a truncated last record, cut it off before appending.
        The existing header is ``log.header``, its records ``log.contents``."""
        path = os.fspath(path)
        if reset or not os.path.exists(path) or os.path.getsize(path) == 0:
            stream = open(path, "wb")
            try:
                stream.write(_encode_header(path, header))
                stream.flush()
                os.fsync(stream.fileno())
            except BaseException:
                stream.close()
                raise
            empty = np.empty(0, dtype=np.uint64)
            return cls(path, stream, LogContents(dict(header), empty, empty.copy(), [], False))
        with open(path, "rb") as existing:
            contents, end = _parse(path, existing.read())
        stream = open(path, "r+b")
        try:
            if contents.truncated:
                logger.warning("Cut a truncated last record off %(path)s at byte %(end)d",
                               {"path": path, "end": end})
                stream.truncate(end)
            stream.seek(end)
        except BaseException:
            stream.close()
            raise
        return cls(path, stream, contents)

    def append(self, fingerprint: int, key: int, payload: bytes = b"") -> None:
        """Write one record and flush it."""
        self._stream.write(_record(fingerprint, key, bytes(payload)))
        self._stream.flush()

    def append_many(self, fingerprints, keys, payloads=None) -> None:
        """Write many records with one write and flush."""
        fps = np.asarray(fingerprints, dtype=np.uint64).tolist()
        ks = np.asarray(keys, dtype=np.uint64).tolist()
        if len(fps) != len(ks) or (payloads is not None and len(payloads) != len(fps)):
            raise ValueError("fingerprints, keys and payloads must have the same length")
        pay = payloads if payloads is not None else [b""] * len(fps)
        self._stream.write(b"".join(_record(f, k, bytes(p)) for f, k, p in zip(fps, ks, pay)))
        self._stream.flush()

    def close(self) -> None:
        if not self._stream.closed:
            self._stream.flush()
            self._stream.close()

    @property
    def closed(self) -> bool:
        return self._stream.closed

    def __enter__(self) -> RecordLog:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @staticmethod
    def read(path) -> LogContents:
        """Every intact record of ``path``; ``truncated`` tells whether a partial
        last record was ignored."""
        with open(path, "rb") as stream:
            data = stream.read()
        return _parse(path, data)[0]
