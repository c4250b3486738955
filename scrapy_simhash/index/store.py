"""Append-only record log of ``(fingerprint, key, payload)``.

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

Torn or corrupt. Reading stops at the first record that does not check
(too short, an impossible length, past the end of the file, or a bad CRC) and
looks at every later byte offset for a record that does check:

* none (the bytes left are a partial record, zeros, or anything else holding
  no valid record): a *torn tail*, what a crash or a power loss leaves.
  ``truncated`` is set, and :meth:`RecordLog.open` cuts the tail off with a
  WARNING giving its size in bytes and whether it was all zeros;
* one: *corruption* (a damaged length field or record with good records after
  it). :class:`CorruptStateError` names the file, the offset of the damage and
  where the next valid record starts; nothing is cut or rewritten, and
  :func:`salvage` copies every intact record into a new log.

A bad magic, an unknown version or a bad header is corruption too; :func:`salvage`
undoes one flipped bit in the header, and writes the caller's header when the
damage is larger.

Durability. Each record (or batch, :meth:`RecordLog.append_many`) is one
``write`` to the unbuffered file, so a process crash (``kill -9``) loses at most
the record being written: a torn tail. A failed write (a full disk) is undone
(the file is truncated back to the last record) before the error is raised, so
the file never holds a partial record followed by good ones. Writes reach the
disk when the kernel writes them back (Linux: within ~30 s) or at an ``fsync``:
the log fsyncs at most every ``fsync_interval`` seconds (default 1 s; at the
first append past that), when it is created and when it is closed. A power loss
loses the records appended since the last fsync: usually from the end (a torn
or zero tail, cut on open); if the disk wrote later pages before earlier ones,
the file reads as corrupt and :func:`salvage` keeps every intact record.
``python -m bench.bench_store``: the default costs 1.67 us of CPU an append
against 1.59 us with ``None`` (the kernel alone; ~80,000-100,000 appends a
second either way), ``fsync_interval=0`` fsyncs every append (~470 appends a
second on this machine's disk: for a crawl, slower than the downloads).

One writer. :meth:`RecordLog.open` takes an exclusive ``flock`` on the file;
a second writer (another process, or another open in the same one) gets
:class:`LogLockedError` naming the file and the PID holding it. Readers
(:meth:`RecordLog.read`) take no lock. Nothing here imports Scrapy.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import struct
import time
import zlib
from typing import Any, NamedTuple

import numpy as np

logger = logging.getLogger(__name__)

__all__ = [
    "CorruptStateError", "LogContents", "LogLockedError", "RecordLog", "SalvageReport", "salvage",
]

MAGIC = b"SIMHLOG\x00"
VERSION = 1
#: Largest payload a record may carry; a larger length is damage.
MAX_PAYLOAD = 1 << 20
#: Default seconds between fsyncs of an appended log.
FSYNC_INTERVAL = 1.0

_PREAMBLE = struct.Struct("<8sIII")
_RECORD = struct.Struct("<IQQ")
_CRC = struct.Struct("<I")
_OVERHEAD = _RECORD.size + _CRC.size  # bytes of a record besides its payload
_U64 = 1 << 64
_SCAN_WINDOW = 1 << 20


class CorruptStateError(ValueError):
    """A state file that cannot be trusted; ``path``, ``offset``, ``reason``."""

    def __init__(self, path, offset: int | None, reason: str):
        self.path = os.fspath(path)
        self.offset = offset
        self.reason = reason
        where = "" if offset is None else f" at byte {offset}"
        super().__init__(f"Corrupt simhash state file {self.path}{where}: {reason}")


class LogLockedError(OSError):
    """Another writer holds the log; ``path`` and ``pid`` (None if unknown)."""

    def __init__(self, path, pid: int | None):
        self.path = os.fspath(path)
        self.pid = pid
        holder = "another process" if pid is None else f"process {pid}"
        if pid == os.getpid():
            holder = "this process (opened twice)"
        super().__init__(
            errno.EAGAIN,
            f"{self.path} is open for writing by {holder}: one writer at a time "
            "(stop the other crawl or give this one another state file)")

    def __str__(self) -> str:
        return self.strerror


class LogContents(NamedTuple):
    header: dict
    fingerprints: np.ndarray
    keys: np.ndarray
    payloads: list
    truncated: bool


class _Tail(NamedTuple):
    """Where the intact records end, and what follows them."""

    end: int
    size: int  # bytes after ``end``: a torn tail (0: none)
    zeros: bool  # the torn tail is all zero bytes


class SalvageReport(NamedTuple):
    """What :func:`salvage` copied: ``records`` kept, ``bytes_skipped`` and the
    ``damage`` as ``(offset, length)`` byte ranges of the source; ``header``:
    ``"read"``, ``"repaired"`` (a damaged header restored exactly, its checksum
    confirming it) or ``"replaced"`` (unreadable: the caller's header written)."""

    source: str
    destination: str
    records: int
    bytes_skipped: int
    damage: list
    header: str = "read"


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


def _parse_header(path, data: bytes) -> tuple[dict, int]:
    """The JSON header and the offset of the first record."""
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
    return header, pos + hlen


def _repair_header(data: bytes) -> tuple[dict | None, int]:
    """A damaged header restored, and the offset of the first record.

    The preamble's magic and version are known; the records start at the first
    valid record after it (JSON text is never one: its bytes make impossible
    lengths), which also tells the header's length. The header's JSON is taken
    when its CRC-32 matches as it is, after flipping one of its bits, or
    against the stored CRC with one bit flipped: one flipped bit anywhere in the
    header is undone exactly (CRC-32 tells every 1- and 2-bit error apart at
    this length). None when the damage is larger."""
    size = len(data)
    first = _next_record(data, _PREAMBLE.size) if size > _PREAMBLE.size else None
    if size < _PREAMBLE.size:
        return None, size
    magic, version, hlen, hcrc = _PREAMBLE.unpack_from(data, 0)
    flipped = (int.from_bytes(magic, "little") ^ int.from_bytes(MAGIC, "little")).bit_count()
    if flipped + (version ^ VERSION).bit_count() > 1:  # not one flipped bit: another file
        return None, size if first is None else first
    start = first
    if start is None:  # no record: the header runs to its length, or to the end
        start = _PREAMBLE.size + hlen if _PREAMBLE.size + hlen <= size else size
    raw = bytearray(data[_PREAMBLE.size:start])
    if len(raw) > 4096:  # not a header this code wrote (and too long to try each bit)
        return None, start
    candidates = []
    if zlib.crc32(raw) == hcrc or any(zlib.crc32(raw) == hcrc ^ (1 << b) for b in range(32)):
        candidates.append(bytes(raw))
    else:
        for i in range(len(raw)):
            for bit in range(8):
                raw[i] ^= 1 << bit
                if zlib.crc32(raw) == hcrc:
                    candidates.append(bytes(raw))
                raw[i] ^= 1 << bit
    for text in candidates:
        try:
            header = json.loads(text)
        except ValueError:
            continue
        if isinstance(header, dict):
            return header, start
    return None, start


def _check(data: bytes, pos: int) -> tuple[int, str]:
    """The end of the valid record at ``pos`` and "", or -1 and what is wrong."""
    size = len(data)
    if size - pos < _RECORD.size:
        return -1, f"{size - pos} bytes, shorter than a record"
    length = _RECORD.unpack_from(data, pos)[0]
    if length > MAX_PAYLOAD:
        return -1, f"impossible record length {length}"
    end = pos + _RECORD.size + length
    if end + _CRC.size > size:
        return -1, f"record length {length} runs past the end of the file"
    if zlib.crc32(memoryview(data)[pos:end]) != _CRC.unpack_from(data, end)[0]:
        return -1, "record checksum mismatch"
    return end + _CRC.size, ""


def _next_record(data: bytes, start: int) -> int | None:
    """The first offset from ``start`` holding a valid record, or None.

    Vectorised over windows: an offset is a candidate when the u32 there is a
    possible length and the record it implies fits in the file and is not all
    zero bytes (a zero record never checks); only candidates get a CRC."""
    size = len(data)
    last = size - _OVERHEAD  # the last offset a record can start at
    if start > last:
        return None
    raw = np.frombuffer(data, dtype=np.uint8)
    pos, window = start, 4096  # damage is usually followed closely by a record
    while pos <= last:
        hi = min(last, pos + window - 1)
        window = min(2 * window, _SCAN_WINDOW)
        n = hi - pos + 1
        seg = raw[pos:hi + _OVERHEAD].astype(np.uint32)
        lengths = seg[:n] | seg[1:n + 1] << 8 | seg[2:n + 2] << 16 | seg[3:n + 3] << 24
        ok = lengths <= MAX_PAYLOAD
        ok &= np.arange(pos + _OVERHEAD, hi + _OVERHEAD + 1, dtype=np.int64) + lengths <= size
        nonzero = np.concatenate([[0], np.cumsum(seg != 0)])
        ok &= (lengths > 0) | (nonzero[_OVERHEAD:n + _OVERHEAD] > nonzero[:n])
        for offset in (np.flatnonzero(ok) + pos).tolist():
            if _check(data, offset)[0] > 0:
                return offset
        pos = hi + 1
    return None


def _parse(path, data: bytes) -> tuple[LogContents, _Tail]:
    """Parse a whole file: its records, and where they end (see the module
    docstring for torn tails and corruption)."""
    header, pos = _parse_header(path, data)
    fps: list[int] = []
    keys: list[int] = []
    payloads: list[bytes] = []
    size = len(data)
    unpack, crc32 = _RECORD.unpack_from, zlib.crc32
    view = memoryview(data)
    while pos < size:
        if size - pos >= _RECORD.size:
            length, fp, key = unpack(data, pos)
            end = pos + _RECORD.size + length
            if (length <= MAX_PAYLOAD and end + _CRC.size <= size
                    and crc32(view[pos:end]) == _CRC.unpack_from(data, end)[0]):
                fps.append(fp)
                keys.append(key)
                payloads.append(data[pos + _RECORD.size:end])
                pos = end + _CRC.size
                continue
        reason = _check(data, pos)[1]
        following = _next_record(data, pos + 1)
        if following is not None:
            raise CorruptStateError(
                path, pos,
                f"{reason}, and a valid record follows at byte {following}: damage, not a "
                "torn last write (the file is left as it is; salvage the intact records "
                "into a new file with `scrapy-simhash salvage`)")
        break
    tail = _Tail(pos, size - pos, size > pos and data.count(0, pos) == size - pos)
    contents = LogContents(
        header, np.array(fps, dtype=np.uint64), np.array(keys, dtype=np.uint64), payloads,
        tail.size > 0,
    )
    return contents, tail


def _read_fd(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    parts, offset = [], 0
    while offset < size:
        chunk = os.pread(fd, min(size - offset, 1 << 30), offset)
        if not chunk:
            break
        parts.append(chunk)
        offset += len(chunk)
    return b"".join(parts)


def _fsync_directory(path: str) -> None:
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _lock_holder(fd: int) -> int | None:
    """The PID holding a ``flock`` on ``fd``'s file, from ``/proc/locks``."""
    st = os.fstat(fd)
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}"
    exact, same_inode = [], []
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as stream:
            for line in stream:
                fields = line.split()  # "1: FLOCK ADVISORY WRITE pid maj:min:inode 0 EOF"
                if len(fields) < 6 or fields[1] != "FLOCK":
                    continue
                where, _, inode = fields[5].rpartition(":")
                if inode == str(st.st_ino):
                    (exact if where == device else same_inode).append(int(fields[4]))
    except (OSError, ValueError):
        return None
    # an overlay filesystem may show another device: then the inode alone, if unique
    found = exact or (same_inode if len(set(same_inode)) == 1 else [])
    return found[0] if found else None


class RecordLog:
    """An open log that :meth:`append` writes one record at a time to.

    ``contents`` holds the records the file had when it was opened (parsed once,
    as opening must find the end of the last intact record anyway), so callers
    load a log and append to it without reading it twice.
    """

    def __init__(self, path, fd: int, contents: LogContents, end: int,
                 fsync_interval: float | None = FSYNC_INTERVAL):
        self.path = os.fspath(path)
        self.header = contents.header
        self.contents = contents
        self.fsync_interval = fsync_interval
        self._fd: int | None = fd
        self._end = end
        self._synced = time.monotonic()

    @classmethod
    def open(cls, path, header: dict, *, reset: bool = False,
             fsync_interval: float | None = FSYNC_INTERVAL) -> RecordLog:
        """Lock ``path`` and open it for appending; create it with ``header`` if
        missing, empty or ``reset``. A torn tail is cut off (WARNING); damage
        raises :class:`CorruptStateError` and leaves the file as it is. The
        existing header is ``log.header``, its records ``log.contents``.
        ``fsync_interval``: see the module docstring."""
        path = os.fspath(path)
        if fsync_interval is not None and fsync_interval < 0:
            raise ValueError(f"fsync_interval must be >= 0 or None, got {fsync_interval}")
        created = not os.path.exists(path)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise LogLockedError(path, _lock_holder(fd)) from None
            if reset or os.fstat(fd).st_size == 0:
                end = cls._write_header(fd, path, header)
                if created:
                    _fsync_directory(path)
                empty = np.empty(0, dtype=np.uint64)
                contents = LogContents(dict(header), empty, empty.copy(), [], False)
                return cls(path, fd, contents, end, fsync_interval)
            contents, tail = _parse(path, _read_fd(fd))
            if tail.size:
                kind = "zero bytes" if tail.zeros else "bytes of a partial last record"
                logger.warning(
                    "Cut %(size)d %(kind)s off %(path)s at byte %(end)d (a torn last write: "
                    "a crash or power loss while appending)",
                    {"size": tail.size, "kind": kind, "path": path, "end": tail.end})
                os.ftruncate(fd, tail.end)
                os.fsync(fd)
            os.lseek(fd, tail.end, os.SEEK_SET)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd, contents, tail.end, fsync_interval)

    @staticmethod
    def _write_header(fd: int, path: str, header: dict) -> int:
        data = _encode_header(path, header)
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        _write_all(fd, data)
        os.fsync(fd)
        return len(data)

    def reset(self, header: dict) -> None:
        """Empty the log and start it again with ``header``, keeping the lock."""
        self._end = self._write_header(self._open_fd(), self.path, header)
        self.header = dict(header)
        self._synced = time.monotonic()

    def _open_fd(self) -> int:
        if self._fd is None:
            raise ValueError(f"{self.path}: the log is closed")
        return self._fd

    def _write(self, data: bytes) -> None:
        """Append ``data`` in full, or undo it: on a failed write (a full disk)
        the file is cut back to the last whole record before the error goes on."""
        fd, end = self._open_fd(), self._end
        try:
            _write_all(fd, data)
        except BaseException:
            try:
                os.ftruncate(fd, end)
                os.lseek(fd, end, os.SEEK_SET)
            except OSError:
                # cannot undo: refuse further appends rather than write good
                # records after a partial one
                self.close()
            raise
        self._end = end + len(data)
        interval = self.fsync_interval
        if interval is not None:
            now = time.monotonic()
            if now - self._synced >= interval:
                os.fsync(fd)
                self._synced = now

    def append(self, fingerprint: int, key: int, payload: bytes = b"") -> None:
        """Write one record."""
        self._write(_record(fingerprint, key, bytes(payload)))

    def append_many(self, fingerprints, keys, payloads=None) -> None:
        """Write many records with one write."""
        fps = np.asarray(fingerprints, dtype=np.uint64).tolist()
        ks = np.asarray(keys, dtype=np.uint64).tolist()
        if len(fps) != len(ks) or (payloads is not None and len(payloads) != len(fps)):
            raise ValueError("fingerprints, keys and payloads must have the same length")
        pay = payloads if payloads is not None else [b""] * len(fps)
        self._write(b"".join(_record(f, k, bytes(p)) for f, k, p in zip(fps, ks, pay)))

    def sync(self) -> None:
        """fsync the log now."""
        os.fsync(self._open_fd())
        self._synced = time.monotonic()

    def close(self) -> None:
        """fsync, unlock and close."""
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    @property
    def closed(self) -> bool:
        return self._fd is None

    def __del__(self) -> None:
        # a log dropped unclosed releases its file and lock, as a file object would
        fd = getattr(self, "_fd", None)
        if fd is not None:
            self._fd = None
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self) -> RecordLog:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @staticmethod
    def read(path) -> LogContents:
        """Every intact record of ``path``; ``truncated`` tells whether a torn
        tail was ignored. Damage raises :class:`CorruptStateError`."""
        with open(path, "rb") as stream:
            data = stream.read()
        return _parse(path, data)[0]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def salvage(src, dst, header: dict | None = None) -> SalvageReport:
    """Copy every intact record of the damaged log ``src`` into a new log
    ``dst`` with the same header: after each damaged stretch, reading resumes
    at the next offset holding a valid record. ``src`` is only read; ``dst``
    must not exist. A damaged header is repaired when one bit of it flipped
    (its CRC tells which); beyond that, ``header`` is written instead (what the
    caller knows the file held), or :class:`CorruptStateError` is raised
    without it (there is then no format or version to trust) or when no valid
    record follows."""
    src, dst = os.fspath(src), os.fspath(dst)
    if os.path.exists(dst):
        raise FileExistsError(errno.EEXIST, f"{dst} exists; salvage writes a new file", dst)
    with open(src, "rb") as stream:
        data = stream.read()
    how = "read"
    try:
        header_read, pos = _parse_header(src, data)
    except CorruptStateError as exc:
        header_read, pos = _repair_header(data)
        how = "repaired"
        if header_read is None:
            if header is None or _next_record(data, pos) is None:  # or nothing to save
                raise
            header_read, how = dict(header), "replaced"
        logger.warning(
            "The header of %(src)s is damaged (%(reason)s): %(how)s",
            {"src": src, "reason": exc.reason,
             "how": "one flipped bit undone, its checksum confirms it" if how == "repaired"
             else f"written anew as {json.dumps(header_read, sort_keys=True)}"})
    header = header_read
    size = len(data)
    fps: list[int] = []
    keys: list[int] = []
    payloads: list[bytes] = []
    damage: list[tuple[int, int]] = []
    while pos < size:
        end = _check(data, pos)[0]
        if end > 0:
            _, fp, key = _RECORD.unpack_from(data, pos)
            fps.append(fp)
            keys.append(key)
            payloads.append(data[pos + _RECORD.size:end - _CRC.size])
            pos = end
            continue
        following = _next_record(data, pos + 1)
        stop = size if following is None else following
        damage.append((pos, stop - pos))
        pos = stop
    with RecordLog.open(dst, header) as log:
        for i in range(0, len(fps), 1 << 16):
            log.append_many(fps[i:i + (1 << 16)], keys[i:i + (1 << 16)],
                            payloads[i:i + (1 << 16)])
    skipped = sum(length for _, length in damage)
    if damage:
        logger.warning(
            "Salvaged %(records)d records of %(src)s into %(dst)s; skipped %(skipped)d damaged "
            "bytes at %(where)s",
            {"records": len(fps), "src": src, "dst": dst, "skipped": skipped,
             "where": ", ".join(f"byte {offset} ({length} bytes)" for offset, length in damage)})
    return SalvageReport(src, dst, len(fps), skipped, damage, how)
