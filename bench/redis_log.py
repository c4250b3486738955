"""A measured alternative for issue 21, not the product: the shared index as a log.

Redis keeps one append-only log of the stored fingerprints (8 bytes a page, key =
position + 1, in strings of :data:`LOG_BLOCK` entries), the sketches and the
URLs; every process keeps the permuted tables itself (an in-process
:class:`~scrapy_simhash.index.SimhashIndex` fed from the log). A probe runs in
the process; the insert is one small script (five commands) that appends only when none of the
entries the process has not seen yet (the log's tail past what it synced) is
within k bits of the page, and returns that tail either way, so the process
stays in sync without another round trip. Redis never looks up a bucket: its
work per page is one script over a few commands, whatever is stored, and a tail
longer than :data:`TAIL_CAP` entries is refused (the process reads the log
first, in bounded chunks).

The same guarantee as the bucket design: a page is appended only after every
stored fingerprint within k has been seen by the writer, so two processes never
both keep near-duplicates; a drop rests on a stored page whose sketch confirms.
The price: every crawler process holds the tables of the whole index in memory
(as the in-process backend does), and a process joining an index reads its log.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from scrapy_simhash.backends.redis_index import CANDIDATE_CAP
from scrapy_simhash.fingerprinting.signature import SKETCH_BINS, confirms_many
from scrapy_simhash.index import Match, SimhashIndex

#: Entries a log string holds (8 MiB): Redis strings stay far below 512 MB.
LOG_BLOCK = 1 << 20
#: Tail entries the insert script compares at most; past that the process syncs.
TAIL_CAP = 1024
#: Entries read per GETRANGE when syncing (1 MiB).
SYNC_CHUNK = 1 << 17
#: Sketches a string holds (a second log, in key order: 1 MiB).
SKETCH_BLOCK = 10922
MAX_ATTEMPTS = 16
_NO_SKETCH = bytes(SKETCH_BINS)

# KEYS: meta, log prefix, sketch prefix, urls.  ARGV: epoch, synced size, fp (8 bytes
# big-endian), k, sketch, url, LOG_BLOCK, TAIL_CAP, SKETCH_BLOCK, SKETCH_BINS.
# Returns {status, key or size, tail}: 0 appended (key), -1 no index, -2 another
# epoch, -4 a tail entry is within k (size; the tail), -7 tail too long (size).
INSERT_SCRIPT = r"""
local meta, logp, skp, urls = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local epoch, seen, fp, k = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local sketch, url = ARGV[5], ARGV[6]
local B, cap, SB, SBINS = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local m = redis.call('HMGET', meta, 'epoch', 'size')
if not m[1] then return {-1, 0, ''} end
if m[1] ~= epoch then return {-2, 0, ''} end
local size = tonumber(m[2])
if size - seen > cap then return {-7, size, ''} end
local parts, pos = {}, seen
while pos < size do
  local block = math.floor(pos / B)
  local upto = math.min(size, (block + 1) * B)
  parts[#parts + 1] = redis.call('GETRANGE', logp .. block, (pos - block * B) * 8,
                                 (upto - block * B) * 8 - 1)
  pos = upto
end
local tail = table.concat(parts)
if #tail > 0 then
  local qa, qb = struct.unpack('>I4I4', fp)
  local band, bxor, rshift = bit.band, bit.bxor, bit.rshift
  local function pop(x)
    x = x - band(rshift(x, 1), 0x55555555)
    x = band(x, 0x33333333) + band(rshift(x, 2), 0x33333333)
    x = band(x + rshift(x, 4), 0x0F0F0F0F)
    return band(x, 0xFF) + band(rshift(x, 8), 0xFF) + band(rshift(x, 16), 0xFF) + rshift(x, 24)
  end
  for i = 1, #tail, 8 do
    local a, b = struct.unpack('>I4I4', tail, i)
    if pop(bxor(a, qa)) + pop(bxor(b, qb)) <= k then return {-4, size, tail} end
  end
end
local key = size + 1
redis.call('HSET', meta, 'size', key)
redis.call('APPEND', logp .. math.floor(size / B), fp)
redis.call('APPEND', skp .. math.floor(size / SB), sketch ~= '' and sketch or string.rep('\0', SBINS))
if url ~= '' then redis.call('HSET', urls, key, url) end
return {0, key, tail}
"""


class RedisLogIndex:
    """The prototype: the log and sketches in Redis, the tables in this process."""

    def __init__(self, client: Any, prefix: str, k: int = 6, expected_size: int = 1 << 20):
        self.client = client
        self.k = k
        self.meta = f"{prefix}:meta"
        self.log = f"{prefix}:log:"
        self.sketches = f"{prefix}:sketches:"
        self.urls = f"{prefix}:urls"
        self.local = SimhashIndex(k=k, layout="auto", expected_size=expected_size)
        self.synced = 0
        self.epoch = ""
        self.script = client.register_script(INSERT_SCRIPT)
        self.conflicts = 0

    def open(self) -> int:
        self.client.hsetnx(self.meta, "epoch", os.urandom(8).hex())
        self.client.hsetnx(self.meta, "size", 0)
        self.epoch = self.client.hget(self.meta, "epoch").decode()
        self.sync()
        return self.synced

    def __len__(self) -> int:
        return int(self.client.hget(self.meta, "size") or 0)

    def sync(self) -> None:
        """Read the log past what this process holds, in bounded chunks."""
        size = len(self)
        while self.synced < size:
            block, at = divmod(self.synced, LOG_BLOCK)
            upto = min(size, self.synced + SYNC_CHUNK, (block + 1) * LOG_BLOCK)
            raw = self.client.getrange(f"{self.log}{block}", at * 8, (upto - block * LOG_BLOCK) * 8 - 1)
            self._take(raw)

    def _take(self, raw: bytes) -> None:
        """Add the log entries ``raw`` (the next ones after :attr:`synced`)."""
        if not raw:
            return
        fps = np.frombuffer(raw, dtype=">u8").astype(np.uint64)
        keys = np.arange(self.synced + 1, self.synced + 1 + len(fps), dtype=np.uint64)
        self.local.add_many(fps, keys)
        self.synced += len(fps)

    def add_many(self, fps: np.ndarray, sketches: list[bytes]) -> None:
        """Bulk load (a benchmark's preload): no probing, one writer."""
        n, first = len(fps), len(self) + 1
        data = np.asarray(fps, dtype=np.uint64).astype(">u8").tobytes()
        pipe = self.client.pipeline(transaction=False)
        pos = first - 1
        while pos < first - 1 + n:
            block = pos // LOG_BLOCK
            upto = min(first - 1 + n, (block + 1) * LOG_BLOCK)
            pipe.append(f"{self.log}{block}", data[(pos - first + 1) * 8 : (upto - first + 1) * 8])
            pos = upto
        blob = b"".join(sketches)
        pos = first - 1
        while pos < first - 1 + n:
            block = pos // SKETCH_BLOCK
            upto = min(first - 1 + n, (block + 1) * SKETCH_BLOCK)
            pipe.append(f"{self.sketches}{block}",
                        blob[(pos - first + 1) * SKETCH_BINS : (upto - first + 1) * SKETCH_BINS])
            pos = upto
        pipe.hset(self.meta, "size", first - 1 + n)
        pipe.execute()

    def query_and_add(self, fp: int, url: str = "", *, sketch: bytes = b"") -> tuple[list[Match], int]:
        """Probe here, confirm by the stored sketches, append if new: (matches, new key)."""
        fp8 = int(fp).to_bytes(8, "big")
        for _ in range(MAX_ATTEMPTS):
            matches = self._confirmed(fp, sketch)
            if matches:
                return matches, 0
            status, value, tail = self.script(
                keys=[self.meta, self.log, self.sketches, self.urls],
                args=[self.epoch, self.synced, fp8, self.k, sketch, url, LOG_BLOCK, TAIL_CAP,
                      SKETCH_BLOCK, SKETCH_BINS])  # fmt: skip
            if status == 0:
                self._take(tail)
                self._take(fp8)
                return [], int(value)
            if status == -4:
                self.conflicts += 1
                self._take(tail)
            elif status == -7:
                self.sync()
            else:
                raise RuntimeError(f"index gone or replaced (status {status})")
        raise RuntimeError("the log kept growing with pages within k")

    def _confirmed(self, fp: int, sketch: bytes) -> list[Match]:
        keys, dists, _ = self.local.query_keys(int(fp), CANDIDATE_CAP)
        if not len(keys):
            return []
        keys_l = keys.tolist()
        if not sketch:
            return [Match(k, 0, d) for k, d in zip(keys_l, dists.tolist())]
        pipe = self.client.pipeline(transaction=False)
        for key in keys_l:
            block, slot = divmod(key - 1, SKETCH_BLOCK)
            pipe.getrange(f"{self.sketches}{block}", slot * SKETCH_BINS, (slot + 1) * SKETCH_BINS - 1)
        stored = pipe.execute()
        have = [i for i, s in enumerate(stored) if len(s) == SKETCH_BINS and s != _NO_SKETCH]
        if not have:
            return []
        others = np.frombuffer(b"".join(stored[i] for i in have), dtype=np.uint8)
        verdicts = confirms_many(np.frombuffer(sketch, dtype=np.uint8),
                                 others.reshape(len(have), SKETCH_BINS))  # fmt: skip
        return [Match(keys_l[i], 0, int(dists[i])) for i, ok in zip(have, verdicts.tolist()) if ok]
