"""TEMPORARY stand-in for ``scrapy_simhash.index.store.salvage`` (issue 16 item 2).

The index branch adds ``salvage(src, dst) -> SalvageReport`` to
``scrapy_simhash/index/store.py``; ``cli/crawl.py`` imports it from there and
falls back to this module only while it is missing. Delete this file once that
branch is merged. Same signature and report; minimal: reads the whole source.
"""

from __future__ import annotations

import errno
import json
import os
import struct
import zlib
from typing import NamedTuple

from scrapy_simhash.index import CorruptStateError, RecordLog
from scrapy_simhash.index.store import MAGIC, MAX_PAYLOAD, VERSION

_PREAMBLE = struct.Struct("<8sIII")
_RECORD = struct.Struct("<IQQ")
_CRC = struct.Struct("<I")


class SalvageReport(NamedTuple):
    source: str
    destination: str
    records: int
    bytes_skipped: int
    damage: list  # (offset, length) byte ranges of the source


def _record_end(data: bytes, pos: int) -> int:
    """End of a valid record at ``pos``, or 0."""
    if len(data) - pos < _RECORD.size + _CRC.size:
        return 0
    length = _RECORD.unpack_from(data, pos)[0]
    end = pos + _RECORD.size + length
    if length > MAX_PAYLOAD or end + _CRC.size > len(data):
        return 0
    if zlib.crc32(data[pos:end]) != _CRC.unpack_from(data, end)[0]:
        return 0
    return end + _CRC.size


def salvage(src, dst) -> SalvageReport:
    src, dst = os.fspath(src), os.fspath(dst)
    if os.path.exists(dst):
        raise FileExistsError(errno.EEXIST, f"{dst} exists; salvage writes a new file", dst)
    with open(src, "rb") as stream:
        data = stream.read()
    if len(data) < _PREAMBLE.size:
        raise CorruptStateError(src, 0, "shorter than the file header")
    magic, version, hlen, hcrc = _PREAMBLE.unpack_from(data, 0)
    raw = data[_PREAMBLE.size:_PREAMBLE.size + hlen]
    if magic != MAGIC or version != VERSION or len(raw) != hlen or zlib.crc32(raw) != hcrc:
        raise CorruptStateError(src, 0, "unreadable file header")
    header = json.loads(raw)
    pos = _PREAMBLE.size + hlen
    fps, keys, payloads, damage = [], [], [], []
    while pos < len(data):
        end = _record_end(data, pos)
        if end:
            _, fp, key = _RECORD.unpack_from(data, pos)
            fps.append(fp)
            keys.append(key)
            payloads.append(data[pos + _RECORD.size:end - _CRC.size])
            pos = end
            continue
        stop = pos + 1
        while stop < len(data) and not _record_end(data, stop):
            stop += 1
        damage.append((pos, stop - pos))
        pos = stop
    log = RecordLog.open(dst, header)
    try:
        log.append_many(fps, keys, payloads)
    finally:
        log.close()
    return SalvageReport(src, dst, len(fps), sum(n for _, n in damage), damage)
