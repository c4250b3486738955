"""A simhash index shared through Redis: its keys, and a probe and insert as one decision.

The index keeps the in-process permuted-table layout (:mod:`scrapy_simhash.index.layout`):
every fingerprint is stored once per table, in a bucket named by the leading
bits of its permuted form, so a fingerprint within k bits of a query shares the
query's bucket in at least one table. Redis holds, under the prefix
``SIMHASH_REDIS_KEY % {"spider": name}`` (format 3, :data:`FORMAT_VERSION`):

- ``<prefix>:meta``: a hash with k, the layout, the fingerprint version, the
  format, the URL format, the placement of the tables, the bucket width,
  ``signature`` (a digest of all of these), ``epoch`` (random, drawn when the
  index is created: a process that finds another one knows the index it joined
  was lost and created again) and ``size`` (the last key handed out);
- ``<prefix>:buckets``: one hash for every table, field = the table's number
  (1 byte; 2 beyond 256 tables) then the bucket's leading permuted bits
  (big-endian, whole bytes) -> packed 12-byte entries (8-byte big-endian
  fingerprint, 4-byte big-endian key), in insertion order;
- ``<prefix>:urls``: for the drop log, a hash of decimal key -> URL
  (``SIMHASH_REDIS_URLS = "full"``), or of key // 255 -> the 8-byte xxh3-64
  hashes of 255 URLs in key order (``"hash"``, compact: the drop log then names
  the kept page as ``xxh3:<hex>``);
- ``<prefix>:sketches:<n>``: strings of :data:`SKETCH_BLOCK` (255) sketches
  (:mod:`scrapy_simhash.fingerprinting.signature`), the sketch of key ``k`` in
  block ``k // 255`` at byte ``(k % 255) * SKETCH_BINS`` (96 bytes a sketch),
  zero bytes for a page stored without one; a block is created whole (24,480
  bytes) by the first page that needs it. Opaque to Redis: no script reads them.

Formats 1 and 2 (a hash per table ``<prefix>:t<i>``, a hash of sketches, no
epoch) are refused with a message saying to clear them. Packing a bucket's entries into one value keeps
the cost near the in-process figure (12 bytes per table instead of ~80 for a key
or hash field per entry).

A page costs two round trips, and Redis never scans entries nor reads a sketch
(``data/redis_insert.lua``): the client reads the page's bucket in every table
(one ``HMGET``, with the metadata's signature and epoch), compares the
fingerprints, fetches (a ``GETRANGE`` per block) the sketches of at most
:data:`CANDIDATE_CAP` candidates
within k (nearest first) and confirms them with
:func:`~scrapy_simhash.fingerprinting.signature.confirms_many`, the one rule every
backend uses. A duplicate ends there. Otherwise a small script inserts the page
only if every bucket is as long as when it was read (buckets only grow, so the
same length is the same content) and the index is the one joined; if a bucket
grew, another writer stored a page there meanwhile and the client reads again
(``redis/conflict_count``). So two processes that see near-duplicate pages at the
same moment cannot both keep them. In a Redis Cluster
(``SIMHASH_REDIS_CLUSTER``) the default template ``{%(spider)s}:simhash`` puts a
crawl's keys in one hash slot, so the script stays one atomic call on one master,
and different crawls spread over the masters
(:mod:`scrapy_simhash.backends.redis_sharded` spreads one crawl's tables instead).

No call grows with what is stored: at most :data:`CANDIDATE_CAP` candidates are
confirmed per page (the others are not examined: a page is never dropped for
them, a copy of one may be kept), a page is not stored when
:data:`SAME_FINGERPRINT_CAP` stored pages already have its exact fingerprint
(pages that differ only in what the fingerprint leaves out, such as numbers: it
is kept, and a later copy of it may be kept too), and a bucket holds at most
:data:`BUCKET_CAP` entries. Missing a duplicate is the price; dropping a distinct
page never is.

At start, every command a crawl needs is run once on the index's keys, changing
nothing (:meth:`RedisSimhashIndex.check_permissions`): a Redis ACL user that may
not run one is refused in one line naming the command and the user. An index
that vanishes mid-crawl (FLUSHALL, eviction, a restart without persistence, a
failover to a replica that had not synced) is noticed by the next page (its
metadata gone, or its epoch changed), created again, counted
(``redis/index_lost_count``), logged as an ERROR then and at close; the crawl
finishes as ``simhash_index_lost``, and the pages queued meanwhile are indexed
into the new index.

The backend a crawl uses (its timeouts, hold-offs and queue) is
:mod:`scrapy_simhash.backends.redis`; this module knows nothing of Scrapy.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from collections import Counter
from importlib import resources
from typing import Any, NamedTuple

import numpy as np
import xxhash

from scrapy_simhash.backends import hashed_url
from scrapy_simhash.extras import needs
from scrapy_simhash.fingerprinting import FINGERPRINT_VERSION
from scrapy_simhash.fingerprinting.signature import SKETCH_BINS, confirms_many
from scrapy_simhash.index import ADD_MODES, Match, TableLayout

logger = logging.getLogger(__name__)

#: The Redis layout: 1 and 2 (a probe-and-insert script that confirmed
#: sketches itself) are refused; 3 adds the metadata's ``epoch`` and the
#: client-side probe with a conditional insert (``data/redis_insert.lua``).
FORMAT_VERSION = 3
ENTRY_SIZE = 12
MAX_KEY = 2**32 - 1
#: At most this many candidates within k (nearest first) are confirmed per
#: probe; the others are not examined, so a page is never dropped for them (a
#: copy of one of them may be kept: counted, ``redis/unexamined_count``).
CANDIDATE_CAP = 64
#: A page is not stored when this many stored pages already have exactly its
#: fingerprint (pages that differ only in what the fingerprint leaves out,
#: such as numbers): it is kept, and a later copy of it may be kept too
#: (``redis/crowded_count``). Bounds what one bucket holds of one fingerprint.
SAME_FINGERPRINT_CAP = 64
#: Entries a bucket may hold (12 bytes each); a full bucket is not appended
#: to, the page stays findable through its other tables (``redis/bucket_full_count``).
BUCKET_CAP = 2048
#: Reads of a page's buckets before giving up when other writers keep
#: changing them between the read and the insert.
MAX_ATTEMPTS = 8
#: Average entries per bucket wanted at the expected index size: larger buckets
#: amortise Redis's ~60 bytes of per-field overhead, smaller ones scan faster
#: (the script compares a candidate in ~0.5 us; bench/results/redis.txt).
BUCKET_TARGET = 16
#: How an index keeps its URLs: "full" (a hash field per page) or "hash"
#: (compact: an 8-byte xxh3-64 hash per page, packed by URL_BLOCK pages; 255
#: hashes and Redis's 6-byte string header fill jemalloc's 2,048-byte class).
URL_FORMATS = ("full", "hash")
URL_BLOCK = 255
#: Sketches packed per string (255 x 64 bytes and Redis's 5-byte header fill
#: jemalloc's 16 KiB class): 64 bytes a page instead of ~128 as hash fields.
SKETCH_BLOCK = 255

_ENTRY_DTYPE = np.dtype([("fp", ">u8"), ("key", ">u4")])
_BYTE_INDEX = np.arange(8)
_NO_SKETCH = bytes(SKETCH_BINS)


def import_redis() -> Any:
    """Import redis-py, or fail with the name of the extra that provides it."""
    try:
        import redis
    except ImportError as exc:
        raise ImportError(
            needs('the Redis backend (SIMHASH_BACKEND = "redis")', "redis-py", "redis")
        ) from exc
    return redis


def _script_source() -> str:
    return (
        resources.files("scrapy_simhash")
        .joinpath("data/redis_insert.lua")
        .read_text(encoding="utf-8")
    )


class IndexMismatchError(ValueError):
    """The shared index was built with another k, layout or fingerprint version."""


class IndexFullError(RuntimeError):
    """Redis refused an insertion for lack of memory; the probe's answer is kept."""

    def __init__(self, message: str, matches: list[Match], nearest_url: str | None) -> None:
        super().__init__(message)
        self.matches = matches
        self.nearest_url = nearest_url

    @classmethod
    def refused(cls, prefix: str, matches: list[Match], nearest_url: str | None) -> IndexFullError:
        """Redis's out-of-memory refusal of a page in the index under ``prefix``."""
        return cls(
            f"Redis refused to store a page in {prefix!r}: out of memory "
            "(maxmemory with the noeviction policy)",
            matches,
            nearest_url,
        )


class IndexMissingError(RuntimeError):
    """The index is gone from Redis (FLUSHALL, eviction, a restart without
    persistence, a failover to an unsynced replica), or was created again by
    another process after that (``recreated``)."""

    def __init__(self, message: str, *, recreated: bool = False) -> None:
        super().__init__(message)
        self.recreated = recreated


class IndexConflictError(RuntimeError):
    """Other writers kept changing a page's buckets between its read and its insert."""


class IndexPermissionError(RuntimeError):
    """The Redis user may not run a command the index needs."""

    def __init__(self, command: str, error: str) -> None:
        super().__init__(f"{command}: {error}")
        self.command = command
        self.error = error


def index_info(client: Any, prefix: str) -> dict[str, Any] | None:
    """The stored metadata of the index under ``prefix`` (None when there is none):
    k, layout, fingerprint_version, format, bucket_bits, size, signature."""
    raw = client.hgetall(f"{prefix}:meta")
    if not raw:
        return None
    info: dict[str, Any] = {}
    for name, value in raw.items():
        name, text = name.decode(), value.decode()
        try:
            info[name] = text if name == "signature" else json.loads(text)
        except ValueError:
            info[name] = text
    return info


def clear_index(client: Any, prefix: str, *, extra: list[str] | tuple[str, ...] = ()) -> int:
    """Delete the index under ``prefix`` (tables per its stored layout, URLs,
    metadata, and ``extra`` keys); return the number of keys deleted."""
    keys = {f"{prefix}:meta", f"{prefix}:urls", f"{prefix}:sketches", *extra}
    info = index_info(client, prefix) or {}
    blocks = int(info.get("size", 0) or 0) // SKETCH_BLOCK + 1
    deleted = 0
    for start in range(0, blocks, 1000):  # format 3: sketches in blocks
        names = [f"{prefix}:sketches:{n}" for n in range(start, min(blocks, start + 1000))]
        deleted += int(client.delete(*names))
    try:
        tables = len(TableLayout.from_dict(info["layout"]).tables)
    except (KeyError, ValueError, TypeError):
        tables = 0
    keys.update(f"{prefix}:t{i}" for i in range(tables))  # formats 1 and 2
    keys.add(f"{prefix}:buckets")
    return deleted + int(client.delete(*sorted(keys)))



class RedisSimhashIndex:
    """Permuted simhash tables in Redis with an atomic probe-and-insert.

    Keys are handed out by Redis (1, 2, 3, ... in insertion order); the index
    keeps a URL per key. Matches are exact: every stored fingerprint within k
    bits, as :class:`scrapy_simhash.index.SimhashIndex` finds.

    A bucket is named by the leading ``min(p, bucket_bits)`` permuted bits of a
    table; ``bucket_bits`` (default: from ``expected_size``) is fixed by the
    process that creates the index and adopted by those that join it.
    """

    #: Where the tables live: all in the prefix's hash slot (one atomic script).
    PLACEMENT = "one_slot"

    def __init__(
        self,
        client: Any,
        prefix: str,
        layout: Any,
        *,
        expected_size: int = 1 << 20,
        fingerprint_version: int = FINGERPRINT_VERSION,
        bucket_bits: int | None = None,
        url_format: str = "full",
    ) -> None:
        if url_format not in URL_FORMATS:
            raise ValueError(f"url_format must be one of {URL_FORMATS}, not {url_format!r}")
        self.client = client
        self.url_format = url_format
        self.prefix = prefix
        self.layout = layout
        self.k = int(layout.k)
        self.expected_size = expected_size
        self.fingerprint_version = fingerprint_version
        self._tables = layout.tables
        self.meta_key = f"{prefix}:meta"
        self.urls_key = f"{prefix}:urls"
        #: Sketch blocks are the strings ``<sketches_key><n>``.
        self.sketches_key = f"{prefix}:sketches:"
        self.buckets_key = f"{prefix}:buckets"
        #: Table ``t``'s buckets are the fields of :attr:`buckets_key` that start
        #: with ``t`` in this many bytes.
        self._table_width = 1 if len(self._tables) <= 256 else 2
        if bucket_bits is not None and not 1 <= bucket_bits <= 32:
            raise ValueError(f"bucket_bits must be from 1 to 32, got {bucket_bits!r}")
        self.bucket_bits = bucket_bits or self._default_bucket_bits()
        self.signature = ""
        self.epoch = ""  # set by open(): which creation of the index was joined
        self._luts: tuple[np.ndarray, np.ndarray, list[int]] | None = None
        self._script = client.register_script(_script_source())
        #: What probes met (``redis/`` stats): conflicts read again, candidates
        #: not examined, pages not stored for a crowded fingerprint or full buckets.
        self.counts: Counter[str] = Counter()
        redis = import_redis()
        self._errors = (redis.RedisError, OSError)

    # -- metadata ----------------------------------------------------------

    def _default_bucket_bits(self) -> int:
        want = max(1, math.ceil(math.log2(max(2, self.expected_size / BUCKET_TARGET))))
        return min(want, 32)

    def _identity(self) -> dict[str, Any]:
        """What every process sharing the index must agree on."""
        return {
            "k": self.k,
            "layout": self.layout.to_dict(),
            "fingerprint_version": self.fingerprint_version,
            "urls": self.url_format,
            "tables": self.PLACEMENT,
            "format": FORMAT_VERSION,
        }

    def open(self, *, reset: bool = False) -> int:
        """Create or join the index; return its size.

        Raises :class:`IndexMismatchError` naming what differs when the stored
        index has another k, layout, fingerprint version or Redis format, and
        :class:`IndexPermissionError` naming the first command the Redis user
        may not run (:meth:`check_permissions`).
        """
        if reset:
            self.clear()
        identity = self._identity()
        fields = {name: json.dumps(value, sort_keys=True) for name, value in identity.items()}
        fields["bucket_bits"] = str(self.bucket_bits)
        fields["size"] = "0"
        fields["signature"] = self._signature(identity, self.bucket_bits)
        fields["epoch"] = os.urandom(8).hex()
        flat = [item for pair in fields.items() for item in pair]
        try:
            raw = self.client.eval(_INIT_SCRIPT, 1, self.meta_key, *flat)
        except import_redis().exceptions.NoPermissionError as exc:
            raise IndexPermissionError("EVAL", str(exc)) from exc
        if len(raw) % 2:
            self._refused(raw[0].decode(), raw[1].decode())
        stored = {raw[i].decode(): raw[i + 1].decode() for i in range(0, len(raw), 2)}
        self._check(identity, stored)
        self.bucket_bits = int(stored["bucket_bits"])
        self.signature = stored["signature"]
        self.epoch = stored["epoch"]
        self.check_permissions()
        return int(stored.get("size", 0))

    @staticmethod
    def _signature(identity: dict[str, Any], bucket_bits: int) -> str:
        text = json.dumps([identity, bucket_bits], sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    def _check(self, identity: dict[str, Any], stored: dict[str, str]) -> None:
        try:
            theirs = int(json.loads(stored.get("format", "0")))
        except (TypeError, ValueError):
            theirs = 0
        if 0 < theirs < FORMAT_VERSION:
            raise IndexMismatchError(
                f"The shared simhash index {self.prefix!r} has the Redis layout of an older "
                f"scrapy-simhash (format {theirs}; this version reads format "
                f"{FORMAT_VERSION}): clear it with SIMHASH_RESET=True (or scrapy-simhash "
                "redis-clear) and crawl again, or use another SIMHASH_REDIS_KEY"
            )
        missing = sorted({*identity, "bucket_bits", "signature", "size", "epoch"} - set(stored))
        if missing:
            raise IndexMismatchError(
                f"Redis key {self.meta_key} is not complete simhash metadata (no "
                f"{', '.join(missing)}); clear it with SIMHASH_RESET=True"
            )
        for name, value in identity.items():
            theirs = json.loads(stored.get(name, "null"))
            if theirs != value:
                raise IndexMismatchError(
                    f"The shared simhash index {self.prefix!r} was built with "
                    f"{name}={json.dumps(theirs)}, this process uses {name}={json.dumps(value)}; "
                    "use the same settings, another SIMHASH_REDIS_KEY, or SIMHASH_RESET=True "
                    "to clear it"
                )

    def clear(self) -> int:
        """Delete every key of this index (its tables, URLs and metadata)."""
        return clear_index(self.client, self.prefix)

    def __len__(self) -> int:
        return int(self.client.hget(self.meta_key, "size") or 0)

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

    def _checked(self, fp: int, add: str, sketch: bytes = b"") -> int:
        if add not in ADD_MODES:
            raise ValueError(f"add must be one of {ADD_MODES}, not {add!r}")
        if not self.epoch:
            raise RuntimeError("call open() before query_and_add()")
        fp = int(fp)
        if not 0 <= fp < 1 << 64:
            raise ValueError(f"fingerprint out of the unsigned 64-bit range: {fp!r}")
        if sketch and len(sketch) != SKETCH_BINS:
            raise ValueError(f"a sketch has {SKETCH_BINS} bytes, this one {len(sketch)}")
        return fp

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

    def _check_alive(self, signature: bytes | None, epoch: bytes | None) -> None:
        """Raise when the index this process joined is no longer there: gone
        (:class:`IndexMissingError`), created again by another process after it
        was lost (the same, ``recreated``), or replaced by another configuration
        (:class:`IndexMismatchError`)."""
        if signature is None:
            raise IndexMissingError(
                f"The simhash index metadata {self.meta_key} vanished (FLUSHALL, eviction, "
                "a restart without persistence, or a failover to a replica that had not "
                "synced)"
            )
        if signature.decode() != self.signature:
            raise IndexMismatchError(
                f"The shared simhash index {self.prefix!r} was replaced by one with "
                f"another configuration (signature {signature.decode()} instead of "
                f"{self.signature}) while this process was using it"
            )
        if (epoch or b"").decode() != self.epoch:
            raise IndexMissingError(
                f"The simhash index {self.prefix!r} vanished and was created again by "
                "another process (its epoch changed) while this process was using it",
                recreated=True,
            )

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
            self._stored_url(url), URL_BLOCK if self.url_format == "hash" else 0,
            sketch, BUCKET_CAP * ENTRY_SIZE, "insert", SKETCH_BINS, SKETCH_BLOCK,
        ]  # fmt: skip
        for field, length in zip(fields, lengths):
            args += [field, length]
        try:
            status, value, skipped = self._script(keys=keys, args=args, client=self._node())
        except self._errors:
            self._node_failed()
            raise
        if status == -1:
            self._check_alive(None, None)
        if status == -2:
            signature, _, epoch = value.decode().partition("/")
            self._check_alive(signature.encode(), epoch.encode())
        if status == -6:  # only in check mode
            self._refused(value.decode(), skipped.decode())
        return int(status), value, int(skipped)

    def _stored_url(self, url: str) -> Any:
        if self.url_format == "hash" and url:
            return xxhash.xxh3_64_digest(url.encode("utf-8", "surrogatepass"))
        return url or ""

    def run_batch(self, entries: list[tuple[int, str, str, bytes]]) -> list[Any]:
        """Probe and insert many ``(fp, url, add, sketch)``, one after the other;
        per entry, what :meth:`query_and_add` returns or the exception it would
        raise. Stops after the first entry that failed for Redis itself (the
        answer is then shorter than ``entries``)."""
        results: list[Any] = []
        for fp, url, add, sketch in entries:
            try:
                results.append(self.query_and_add(fp, url, add=add, sketch=sketch))
            except (IndexFullError, IndexMismatchError, IndexMissingError,
                    IndexConflictError) as exc:  # fmt: skip
                results.append(exc)
            except self._errors as exc:
                results.append(exc)
                break
        return results

    def slot_keys(self) -> list[str]:
        """The keys one script call touches, which a cluster needs in one slot."""
        return [self.meta_key, self.urls_key, self.sketch_block(0), self.buckets_key]

    def sketch_block(self, block: int) -> str:
        """The key of sketch block ``block`` (keys ``block * SKETCH_BLOCK`` on)."""
        return f"{self.sketches_key}{block}"

    def _node(self) -> Any:
        """The client of the node holding this index's slot (the client itself
        outside a cluster): redis-py's cluster client refuses EVALSHA with keys
        in several slots' worth of arguments, and pipelines need one node."""
        node_of = getattr(self.client, "get_node_from_key", None)
        if node_of is None:
            return self.client
        return self.client.get_redis_connection(node_of(self.meta_key))

    def _node_failed(self) -> None:
        """After a failed call to the node directly: a cluster client reads the
        slot map again only on errors of its own calls, so a failover would
        otherwise go unnoticed."""
        manager = getattr(self.client, "nodes_manager", None)
        if manager is not None:
            try:
                manager.initialize()
            except (*self._errors, import_redis().exceptions.RedisClusterException):
                pass

    def pipeline(self) -> Any:
        """A non-transactional pipeline to the node holding this index."""
        return self._node().pipeline(transaction=False)

    def load_script(self) -> None:
        """Load the insert script (into every master of a cluster)."""
        self.client.script_load(self._script.script)

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

    @staticmethod
    def _refused(command: str, error: str) -> None:
        """Raise for a command a script could not run: a permission error when
        the Redis user may not, else the error itself."""
        if "user executing the script" in error or "NOPERM" in error:
            raise IndexPermissionError(command.upper(), error)
        raise import_redis().exceptions.ResponseError(f"{command.upper()}: {error}")

    def url_token(self, url: str) -> str:
        """What the index keeps of ``url``: the URL, or ``xxh3:<16 hex digits>``
        of its xxh3-64 hash in the compact format."""
        if self.url_format == "full" or not url:
            return url
        return hashed_url(url)

    def decode_url(self, raw: bytes) -> str:
        """A URL as the script returns it (the URL, or its 8-byte hash)."""
        if self.url_format == "hash":
            return "xxh3:" + raw.hex() if raw and raw != bytes(8) else ""
        return raw.decode("utf-8", "replace")

    def query(self, fp: int) -> list[Match]:
        """Every stored fingerprint within k bits, sorted by (distance, key)."""
        return self.query_and_add(fp, add="never")[0]

    def url(self, key: int) -> str | None:
        """The URL stored with ``key`` (its token in the compact format), or None."""
        key = int(key)
        if self.url_format == "hash":
            block = self.client.hget(self.urls_key, str(key // URL_BLOCK))
            raw = (block or b"")[(key % URL_BLOCK) * 8 : (key % URL_BLOCK) * 8 + 8]
            return self.decode_url(raw) or None
        value = self.client.hget(self.urls_key, str(key))
        return None if value is None else value.decode("utf-8", "replace")

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
        if not self.epoch:
            raise RuntimeError("call open() before add_many()")
        fps = np.ascontiguousarray(fps, dtype=np.uint64)
        if urls is not None and len(urls) != len(fps):
            raise ValueError(f"{len(fps)} fingerprints but {len(urls)} URLs")
        if sketches is not None and len(sketches) != len(fps):
            raise ValueError(f"{len(fps)} fingerprints but {len(sketches)} sketches")
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
        if urls is not None and self.url_format == "hash":
            self._add_url_hashes(int(keys[0]), urls)
        elif urls is not None:
            self._hset_by_key(self.urls_key, keys, urls, batch)
        if sketches is not None:
            self._add_sketches(int(keys[0]), sketches)
        return keys

    def _hset_by_key(self, name: str, keys: np.ndarray, values: Any, batch: int) -> None:
        """``values[i]`` under field ``keys[i]`` of hash ``name``, ``batch`` fields a command."""
        pipe = self.client.pipeline(transaction=False)
        for start in range(0, len(keys), batch):
            chunk = dict(zip(map(str, keys[start : start + batch].tolist()),
                             values[start : start + batch]))
            pipe.hset(name, mapping=chunk)
        pipe.execute()

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

    def _add_url_hashes(self, first: int, urls: list[str]) -> None:
        """Write the 8-byte hashes of ``urls`` (keys ``first``, ``first + 1``, ...)
        into their blocks of the compact URL format."""
        hashes = b"".join(
            xxhash.xxh3_64_digest(u.encode("utf-8", "surrogatepass")) if u else bytes(8)
            for u in urls
        )
        write = self.client.register_script(_URL_BLOCK_SCRIPT)
        key, end, args = first, first + len(urls), []
        while key < end:
            upto = min(end, (key // URL_BLOCK + 1) * URL_BLOCK)
            at = (key - first) * 8
            chunk = hashes[at : at + (upto - key) * 8]
            args += [str(key // URL_BLOCK), (key % URL_BLOCK) * 8, chunk]
            key = upto
            if len(args) >= 3 * 1000:
                write(keys=[self.urls_key], args=args)
                args = []
        if args:
            write(keys=[self.urls_key], args=args)


# Creates the metadata hash unless it exists, atomically; returns what is stored
# (an even number of items), or {command, error} of a command refused (two,
# tagged by a third item, "refused").
_INIT_SCRIPT = """
local current -- a refused command may raise even under pcall
local function try(...)
  current = (...)
  local reply = redis.pcall(...)
  if type(reply) == 'table' and reply.err then
    error({command = (...), message = reply.err})
  end
  return reply
end
local ok, result = pcall(function()
  if try('EXISTS', KEYS[1]) == 0 then
    try('HSET', KEYS[1], unpack(ARGV))
  end
  return try('HGETALL', KEYS[1])
end)
if ok then
  return result
end
if type(result) == 'table' then
  return {result.command or current, result.message or result.err, 'refused'}
end
return redis.error_reply(tostring(result))
"""

# Writes packed URL hashes at a byte offset of their block (padding a gap with zeros).
_URL_BLOCK_SCRIPT = """
for i = 1, #ARGV, 3 do
  local old = redis.call('HGET', KEYS[1], ARGV[i]) or ''
  local at = tonumber(ARGV[i + 1])
  if #old < at then
    old = old .. string.rep('\\0', at - #old)
  end
  redis.call('HSET', KEYS[1], ARGV[i], string.sub(old, 1, at) .. ARGV[i + 2])
end
return 0
"""

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


class StoredPages(NamedTuple):
    """Every page of a Redis index, for the command line: as a crawl stored them."""

    k: int  #: the index's k (the crawl's ``SIMHASH_MAX_DISTANCE``)
    fingerprints: np.ndarray  #: ``uint64``, by key order
    sketches: np.ndarray  #: ``(n, SKETCH_BINS)`` ``uint8``
    urls: list[str]  #: URLs, or ``xxh3:<hex>`` with ``SIMHASH_REDIS_URLS = "hash"``


def read_index_pages(client: Any, prefix: str) -> StoredPages | None:
    """Read every page of the index under ``prefix`` (None when there is none):
    the first table holds each page once; sketches and URLs by key."""
    info = index_info(client, prefix)
    if info is None:
        return None
    version = info.get("fingerprint_version")
    if version != FINGERPRINT_VERSION:
        raise IndexMismatchError(
            f"The index {prefix!r} holds fingerprints of version {version}, this "
            f"scrapy-simhash computes version {FINGERPRINT_VERSION}: they cannot be compared"
        )
    # The first table holds every stored page once: its fields (format 3) start
    # with table number 0 (one byte, two beyond 256 tables).
    if info.get("tables", "one_slot") == "sharded":
        base = prefix.replace("{", "").replace("}", "")
        fields = client.hgetall(f"{{{base}:t0}}:table")
    else:
        fields = client.hgetall(f"{prefix}:buckets")
    try:
        width = 1 if len(TableLayout.from_dict(info["layout"]).tables) <= 256 else 2
    except (KeyError, ValueError, TypeError):
        width = 1
    blobs = [value for field, value in fields.items() if not any(field[:width])]
    entries = np.frombuffer(b"".join(blobs), dtype=_ENTRY_DTYPE)
    entries = entries[np.argsort(entries["key"], kind="stable")]
    keys = entries["key"].astype(np.uint64)
    fingerprints = entries["fp"].astype(np.uint64)
    sketches = np.zeros((len(keys), SKETCH_BINS), dtype=np.uint8)
    blocks: dict[int, bytes] = {}
    for row, key in enumerate(keys.tolist()):
        block = key // SKETCH_BLOCK
        if block not in blocks:
            blocks[block] = client.get(f"{prefix}:sketches:{block}") or b""
        at = (key % SKETCH_BLOCK) * SKETCH_BINS
        value = blocks[block][at : at + SKETCH_BINS]
        if len(value) == SKETCH_BINS:
            sketches[row] = np.frombuffer(value, dtype=np.uint8)
    raw_urls = client.hgetall(f"{prefix}:urls")
    urls = []
    for key in keys.tolist():
        if info.get("urls", "full") == "hash":
            block = raw_urls.get(str(key // URL_BLOCK).encode(), b"")
            hashed = block[(key % URL_BLOCK) * 8 : (key % URL_BLOCK) * 8 + 8]
            urls.append("xxh3:" + hashed.hex() if hashed and hashed != bytes(8) else f"key:{key}")
        else:
            value = raw_urls.get(str(key).encode())
            urls.append(value.decode("utf-8", "replace") if value else f"key:{key}")
    return StoredPages(int(info["k"]), fingerprints, sketches, urls)
