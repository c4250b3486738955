"""The shared index as permuted tables in Redis (format 3): the design the
one-slot index had before its log (:mod:`scrapy_simhash.backends.redis_index`),
kept for one crawl's tables spread over a cluster's masters
(:mod:`scrapy_simhash.backends.redis_sharded`) and as the benchmarks' comparison.

Redis holds, under the prefix, besides the metadata (with ``bucket_bits``) and
the URLs of :mod:`~scrapy_simhash.backends.redis_index`:

- ``<prefix>:buckets``: one hash for every table, field = the table's number
  (1 byte; 2 beyond 256 tables) then the bucket's leading permuted bits
  (big-endian, whole bytes) -> packed 12-byte entries (8-byte big-endian
  fingerprint, 4-byte big-endian key), in insertion order (the sharded
  placement: a hash per table instead);
- ``<prefix>:sketches:<n>``: strings of :data:`SKETCH_BLOCK` (255) sketches, the
  sketch of key ``k`` in block ``k // 255`` at byte ``(k % 255) * SKETCH_BINS``,
  zero bytes for a page stored without one; a block is created whole by the
  first page that needs it.

A page costs two round trips, and Redis never scans entries nor reads a sketch
(``data/redis_insert.lua``): the client reads the page's bucket in every table
(one ``HMGET``, with the metadata's signature and epoch), compares the
fingerprints, confirms at most :data:`CANDIDATE_CAP` candidates within k by
their sketches; a small script then inserts the page only if every bucket is as
long as when it was read (buckets only grow, so the same length is the same
content) and the index is the one joined; if a bucket grew, the client reads
again (``redis/conflict_count``). A bucket holds at most :data:`BUCKET_CAP`
entries (``redis/bucket_full_count``), and a page is not stored when
:data:`SAME_FINGERPRINT_CAP` stored pages have its fingerprint.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from scrapy_simhash.backends.redis_index import (
    BUCKET_SKETCH_BLOCK,
    CANDIDATE_CAP,
    ENTRY_DTYPE,
    ENTRY_SIZE,
    SAME_FINGERPRINT_CAP,
    IndexConflictError,
    IndexFullError,
    IndexPermissionError,
    RedisIndexBase,
    import_redis,
)
from scrapy_simhash.fingerprinting.signature import SKETCH_BINS, confirms_many
from scrapy_simhash.index import Match

__all__ = ["BUCKET_CAP", "BucketRedisSimhashIndex"]

MAX_KEY = 2**32 - 1
#: Entries a bucket may hold (12 bytes each); a full bucket is not appended
#: to, the page stays findable through its other tables (``redis/bucket_full_count``).
BUCKET_CAP = 2048
#: Reads of a page's buckets before giving up when other writers keep
#: changing them between the read and the insert.
MAX_ATTEMPTS = 8
#: Average entries per bucket wanted at the expected index size: larger buckets
#: amortise Redis's ~60 bytes of per-field overhead, smaller ones scan faster.
BUCKET_TARGET = 16
#: Sketches packed per string (255 x 96 bytes).
SKETCH_BLOCK = BUCKET_SKETCH_BLOCK

_ENTRY_DTYPE = ENTRY_DTYPE
_BYTE_INDEX = np.arange(8)
_NO_SKETCH = bytes(SKETCH_BINS)


class BucketRedisSimhashIndex(RedisIndexBase):
    """Permuted simhash tables in Redis with an atomic probe-and-insert.

    Matches are exact: every stored fingerprint within k bits, as
    :class:`scrapy_simhash.index.SimhashIndex` finds.

    A bucket is named by the leading ``min(p, bucket_bits)`` permuted bits of a
    table; ``bucket_bits`` (default: from ``expected_size``) is fixed by the
    process that creates the index and adopted by those that join it.
    """

    #: Where the tables live: all in the prefix's hash slot (one atomic script).
    PLACEMENT = "one_slot"
    FORMAT = 3
    SCRIPT = "redis_insert.lua"

    def __init__(
        self, client: Any, prefix: str, layout: Any, *, bucket_bits: int | None = None,
        **kwargs: Any,
    ) -> None:  # fmt: skip
        super().__init__(client, prefix, layout, **kwargs)
        #: Sketch blocks are the strings ``<sketches_key><n>``.
        self.sketches_key = f"{prefix}:sketches:"
        self.buckets_key = f"{prefix}:buckets"
        #: Table ``t``'s buckets are the fields of :attr:`buckets_key` that start
        #: with ``t`` in this many bytes.
        self._table_width = 1 if len(self._tables) <= 256 else 2
        if bucket_bits is not None and not 1 <= bucket_bits <= 32:
            raise ValueError(f"bucket_bits must be from 1 to 32, got {bucket_bits!r}")
        self.bucket_bits = bucket_bits or self._default_bucket_bits()
        self._luts: tuple[np.ndarray, np.ndarray, list[int]] | None = None

    # -- metadata ----------------------------------------------------------

    def _default_bucket_bits(self) -> int:
        want = max(1, math.ceil(math.log2(max(2, self.expected_size / BUCKET_TARGET))))
        return min(want, 32)

    def _extra_fields(self) -> dict[str, str]:
        return {"bucket_bits": str(self.bucket_bits)}

    def _signed(self) -> Any:
        return self.bucket_bits

    def _adopt(self, stored: dict[str, str]) -> None:
        self.bucket_bits = int(stored["bucket_bits"])

    # -- buckets -----------------------------------------------------------

    def _take(self, table: Any) -> int:
        """Leading permuted bits that name a bucket: at most the table's p, so a
        neighbour sharing p leading bits with the query shares its bucket."""
        return min(table.p, self.bucket_bits)

    def bucket_fields(self, fp: int) -> list[bytes]:
        """The bucket field of ``fp`` in each table (every table at once: one
        lookup per byte of ``fp`` in :meth:`_byte_tables`)."""
        if self._luts is None:
            self._luts = self._byte_tables()
        luts, shifts, widths = self._luts
        permuted = np.bitwise_or.reduce(luts[:, _BYTE_INDEX, np.frombuffer(
            int(fp).to_bytes(8, "little"), dtype=np.uint8)], axis=1)
        buckets = (permuted >> shifts).tolist()
        return [self._field(t, bucket.to_bytes(width, "big"))
                for t, (bucket, width) in enumerate(zip(buckets, widths))]

    def _byte_tables(self) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """Per table, the permuted image of every value of every byte of a
        fingerprint (a permutation moves bits, so the image of a fingerprint is
        the OR of its bytes' images), the shift to a bucket, its width in bytes."""
        values = np.arange(256, dtype=np.uint64)
        luts = np.empty((len(self._tables), 8, 256), dtype=np.uint64)
        for t, table in enumerate(self._tables):
            for i in range(8):
                luts[t, i] = table.permute_many(values << np.uint64(8 * i))
        takes = [self._take(table) for table in self._tables]
        shifts = np.array([64 - take for take in takes], dtype=np.uint64)
        return luts, shifts, [(take + 7) // 8 for take in takes]

    def _field(self, table: int, bucket: bytes) -> bytes:
        """The field of table ``table``'s ``bucket`` in :meth:`_table_key`."""
        return table.to_bytes(self._table_width, "big") + bucket

    def _table_key(self, table: int) -> str:
        """The hash holding table ``table``'s buckets (all of them here)."""
        return self.buckets_key

    def bucket_numbers(self, fps: np.ndarray) -> list[np.ndarray]:
        """Vectorised :meth:`bucket_fields`: per table, the bucket numbers (uint64)."""
        fps = np.asarray(fps, dtype=np.uint64)
        return [
            table.permute_many(fps) >> np.uint64(64 - self._take(table))
            for table in self._tables
        ]

    # -- probe and insert --------------------------------------------------

    def query_and_add(
        self, fp: int, url: str = "", *, add: str = "if_new", sketch: bytes = b""
    ) -> tuple[list[Match], str | None, int]:
        """Probe every table; insert ``fp`` (with ``url`` and ``sketch``) per
        ``add``, atomically.

        The buckets are read (one pipelined round trip), the candidates within
        k compared here, at most :data:`CANDIDATE_CAP` of them (nearest first)
        confirmed by their stored sketches with
        :func:`~scrapy_simhash.fingerprinting.signature.confirms_many` (one more
        round trip; a stored page without a sketch is never confirmed; without
        a ``sketch`` every candidate counts); then the conditional insert
        appends only if no bucket read has changed meanwhile, else everything
        is read again. Returns the confirmed matches sorted by (distance, key),
        the URL of the nearest (with ``url_format="hash"``, its
        :meth:`url_token`), and the new key (0 when nothing was inserted).
        Raises :class:`IndexFullError`, carrying the matches, when Redis
        refused the insertion for lack of memory; :class:`IndexMissingError`
        when the index vanished; :class:`IndexConflictError` when the buckets
        kept changing.
        """
        fp = self._checked(fp, add, sketch)
        fields = self.bucket_fields(fp)
        for _ in range(MAX_ATTEMPTS):
            blobs = self._read(fields)
            matches = self._confirmed(self._candidates(fp, blobs), sketch)
            nearest = self.url(matches[0].key) if matches else None
            if not (add == "always" or (add == "if_new" and not matches)):
                return matches, nearest, 0
            if self._crowded(fp, blobs):
                self.counts["crowded_count"] += 1
                return matches, nearest, 0
            lengths = [len(blob or b"") if add == "if_new" else -1 for blob in blobs]
            status, value, skipped = self._insert(fp, url, sketch, fields, lengths)
            if status == 0:
                if skipped:
                    self.counts["bucket_full_count"] += int(skipped)
                return matches, nearest, int(value)
            if status == -3:
                raise IndexFullError.refused(self.prefix, matches, nearest)
            if status == -5:
                self.counts["bucket_full_count"] += int(skipped)
                self.counts["crowded_count"] += 1
                return matches, nearest, 0
            self.counts["conflict_count"] += 1  # -4: read again
        raise IndexConflictError(
            f"the buckets of a page in {self.prefix!r} changed {MAX_ATTEMPTS} times "
            "between reading and inserting"
        )

    # -- the steps of a probe ------------------------------------------------

    def _read(self, fields: list[bytes]) -> list[bytes | None]:
        """The query's bucket in every table, and the metadata's signature and
        epoch (checked: :meth:`_check_alive`), in one pipelined round trip."""
        pipe = self.pipeline()
        pipe.hmget(self.meta_key, ["signature", "epoch"])
        pipe.hmget(self.buckets_key, fields)
        try:
            meta, blobs = pipe.execute()
        except self._errors:
            self._node_failed()
            raise
        self._check_alive(*meta)
        return blobs

    def _candidates(self, fp: int, blobs: list[bytes | None]) -> list[Match]:
        """The stored fingerprints within k in the buckets read, once each,
        nearest first (then oldest): at most :data:`CANDIDATE_CAP`."""
        data = b"".join(blob for blob in blobs if blob)
        if not data:
            return []
        rows = np.frombuffer(data, dtype=_ENTRY_DTYPE)
        fps = rows["fp"].astype(np.uint64)
        distances = np.bitwise_count(fps ^ np.uint64(fp))
        near = np.flatnonzero(distances <= self.k)
        if not len(near):
            return []
        keys, first = np.unique(rows["key"][near], return_index=True)
        near = near[first]
        order = np.lexsort((keys, distances[near]))
        if len(order) > CANDIDATE_CAP:
            self.counts["unexamined_count"] += len(order) - CANDIDATE_CAP
            order = order[:CANDIDATE_CAP]
        return [
            Match(key, stored, distance)
            for key, stored, distance in zip(
                keys[order].tolist(), fps[near][order].tolist(), distances[near][order].tolist()
            )
        ]

    def _confirmed(self, candidates: list[Match], sketch: bytes) -> list[Match]:
        """The candidates whose stored sketch confirms ``sketch``
        (:func:`~scrapy_simhash.fingerprinting.signature.confirms_many`; every
        candidate without a ``sketch``), in the same order."""
        if not sketch or not candidates:
            return candidates
        # one GETRANGE per block, over the slots of its candidates
        spans: dict[int, list[int]] = {}
        for m in candidates:
            block, slot = divmod(m.key, SKETCH_BLOCK)
            span = spans.setdefault(block, [slot, slot])
            span[0], span[1] = min(span[0], slot), max(span[1], slot)
        pipe = self.pipeline()
        for block, (low, high) in spans.items():
            pipe.getrange(self.sketch_block(block), low * SKETCH_BINS, (high + 1) * SKETCH_BINS - 1)
        ranges = dict(zip(spans, pipe.execute()))
        stored = []
        for m in candidates:
            block, slot = divmod(m.key, SKETCH_BLOCK)
            at = (slot - spans[block][0]) * SKETCH_BINS
            stored.append(ranges[block][at : at + SKETCH_BINS])
        # a page stored without a sketch (zeros) is never confirmed
        have = [i for i, other in enumerate(stored)
                if len(other) == SKETCH_BINS and other != _NO_SKETCH]  # fmt: skip
        if not have:
            return []
        others = np.frombuffer(b"".join(stored[i] for i in have), dtype=np.uint8)
        others = others.reshape(len(have), SKETCH_BINS)
        verdicts = confirms_many(np.frombuffer(sketch, dtype=np.uint8), others)  # one row: all
        return [candidates[i] for i, ok in zip(have, verdicts.tolist()) if ok]

    def _crowded(self, fp: int, blobs: list[bytes | None]) -> bool:
        """Whether :data:`SAME_FINGERPRINT_CAP` stored pages already have exactly
        this fingerprint (they share every bucket of it: the first table's says)."""
        blob = next((b for b in blobs if b is not None), None)
        if not blob or len(blob) < SAME_FINGERPRINT_CAP * ENTRY_SIZE:
            return False
        rows = np.frombuffer(blob, dtype=_ENTRY_DTYPE)
        return int(np.count_nonzero(rows["fp"] == np.uint64(fp))) >= SAME_FINGERPRINT_CAP

    def _script_tables(self) -> list[str]:
        """The bucket key the insert script appends to (none when the tables
        live in slots of their own)."""
        return [self.buckets_key]

    def _insert(
        self, fp: int, url: str, sketch: bytes, fields: list[bytes], lengths: list[int]
    ) -> tuple[int, Any, int]:
        """Run the conditional insert script: (status, new key or detail, skipped)."""
        keys = [self.meta_key, self.urls_key, self.sketches_key, *self._script_tables()]
        args: list[Any] = [
            self.signature, self.epoch, int(fp).to_bytes(8, "big") + bytes(4),
            self._stored_url(url), self._url_block_arg(),
            sketch, BUCKET_CAP * ENTRY_SIZE, "insert", SKETCH_BINS, SKETCH_BLOCK,
        ]  # fmt: skip
        for field, length in zip(fields, lengths):
            args += [field, length]
        try:
            status, value, skipped = self.run_script(keys, args)
        except self._errors:
            self._node_failed()
            raise
        self._check_reply(status, value)
        if status == -6:  # only in check mode
            self._refused(value.decode(), skipped.decode())
        return int(status), value, int(skipped)

    def slot_keys(self) -> list[str]:
        """The keys one script call touches, which a cluster needs in one slot."""
        return [self.meta_key, self.urls_key, self.sketch_block(0), self.buckets_key]

    def sketch_block(self, block: int) -> str:
        """The key of sketch block ``block`` (keys ``block * SKETCH_BLOCK`` on)."""
        return f"{self.sketches_key}{block}"

    def check_permissions(self) -> None:
        """Run every command a crawl needs once, on this index's keys, changing
        nothing a reader sees; raise :class:`IndexPermissionError` naming the
        first one Redis refuses (an ACL user allowed EVAL but not EVALSHA would
        otherwise pass start-up and then leave every page unchecked)."""
        redis = import_redis()
        command = "SCRIPT LOAD"
        try:
            self._node().script_load(self._script.script)
            command = "HMGET/HGET"
            self._read(self.bucket_fields(0))
            self.client.getrange(self.sketch_block(0), 0, SKETCH_BINS - 1)
            self.url(1)
            command = "EVALSHA"
            tables = self._script_tables()
            keys = [self.meta_key, self.urls_key, self.sketches_key, *tables]
            args: list[Any] = [self.signature, self.epoch, bytes(12), "", 0, b"", 0, "check",
                               SKETCH_BINS, SKETCH_BLOCK]  # fmt: skip
            for field in self.bucket_fields(0)[: len(tables)]:
                args += [field, -1]
            reply = self._node().evalsha(self._script.sha, len(keys), *keys, *args)
        except redis.exceptions.NoPermissionError as exc:
            raise IndexPermissionError(command, str(exc)) from exc
        if reply[0] == -6:
            self._refused(reply[1].decode(), reply[2].decode())

    # -- bulk load ---------------------------------------------------------

    def add_many(
        self,
        fps: np.ndarray,
        urls: list[str] | None = None,
        *,
        sketches: list[bytes] | None = None,
        batch: int = 20000,
    ) -> np.ndarray:
        """Append many fingerprints (with their URLs and sketches) without
        probing (like ``add="always"``).

        For loading a known set (an earlier crawl, a benchmark). Not atomic
        against concurrent probes: load before the crawl starts. Returns the keys.
        """
        fps = self._bulk(fps, urls, sketches)
        n = len(fps)
        if n == 0:
            return np.empty(0, dtype=np.uint64)
        last = int(self.client.hincrby(self.meta_key, "size", n))
        if last > MAX_KEY:
            self.client.hincrby(self.meta_key, "size", -n)
            raise OverflowError(f"simhash index {self.prefix!r} would exceed {MAX_KEY} keys")
        keys = np.arange(last - n + 1, last + 1, dtype=np.uint64)
        entries = np.empty(n, dtype=_ENTRY_DTYPE)
        entries["fp"] = fps
        entries["key"] = keys
        append = self.client.register_script(_APPEND_SCRIPT)
        for table, buckets in enumerate(self.bucket_numbers(fps)):
            order = np.argsort(buckets, kind="stable")
            sorted_buckets = buckets[order]
            starts = np.flatnonzero(np.r_[True, sorted_buckets[1:] != sorted_buckets[:-1]])
            ends = np.r_[starts[1:], n]
            width = (self._take(self._tables[table]) + 7) // 8
            data = entries[order].tobytes()
            args: list[bytes] = []
            for start, end in zip(starts.tolist(), ends.tolist()):
                field = self._field(table, int(sorted_buckets[start]).to_bytes(width, "big"))
                args += [field, data[start * ENTRY_SIZE : end * ENTRY_SIZE]]
                if len(args) >= 2 * batch:
                    append(keys=[self._table_key(table)], args=args)
                    args = []
            if args:
                append(keys=[self._table_key(table)], args=args)
        if urls is not None:
            self._add_urls(keys, urls, batch)
        if sketches is not None:
            self._add_sketches(int(keys[0]), sketches)
        return keys

    def _add_sketches(self, first: int, sketches: list[bytes]) -> None:
        """Write ``sketches`` (keys ``first``, ``first + 1``, ...) into their blocks."""
        data = b"".join(s if len(s) == SKETCH_BINS else bytes(SKETCH_BINS) for s in sketches)
        write = self.client.register_script(_SKETCH_BLOCK_SCRIPT)
        key, end, args = first, first + len(sketches), []
        while key < end:
            upto = min(end, (key // SKETCH_BLOCK + 1) * SKETCH_BLOCK)
            at = (key - first) * SKETCH_BINS
            args += [str(key // SKETCH_BLOCK), (key % SKETCH_BLOCK) * SKETCH_BINS,
                     data[at : at + (upto - key) * SKETCH_BINS]]  # fmt: skip
            key = upto
            if len(args) >= 3 * 200:
                write(keys=[self.sketches_key], args=[SKETCH_BINS * SKETCH_BLOCK, *args],
                      client=self._node())  # fmt: skip
                args = []
        if args:
            write(keys=[self.sketches_key], args=[SKETCH_BINS * SKETCH_BLOCK, *args],
                  client=self._node())  # fmt: skip


# Writes sketches into their blocks (KEYS[1]: the blocks' name without the number;
# ARGV[1]: a block's size, then (block number, byte offset, bytes) triples), making
# a missing block whole first (SET is exact-size).
_SKETCH_BLOCK_SCRIPT = """
for i = 2, #ARGV, 3 do
  local name = KEYS[1] .. ARGV[i]
  if redis.call('EXISTS', name) == 0 then
    redis.call('SET', name, string.rep('\\0', tonumber(ARGV[1])))
  end
  redis.call('SETRANGE', name, tonumber(ARGV[i + 1]), ARGV[i + 2])
end
return 0
"""

_APPEND_SCRIPT = """
for i = 1, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[1], ARGV[i]) or ''
  redis.call('HSET', KEYS[1], ARGV[i], old .. ARGV[i + 1])
end
return 0
"""
