"""A simhash index shared through Redis, for crawls spread over several processes.

The index keeps the in-process permuted-table layout (:mod:`scrapy_simhash.index.layout`):
every fingerprint is stored once per table, in a bucket named by the leading
bits of its permuted form, so a fingerprint within k bits of a query shares the
query's bucket in at least one table. Redis holds, under the prefix
``SIMHASH_REDIS_KEY % {"spider": name}``:

- ``<prefix>:meta``: a hash with k, the layout, the fingerprint version, the
  entry format, the URL format, the bucket width and ``size`` (the last key
  handed out);
- ``<prefix>:t<i>``: one hash per table, bucket field -> packed 12-byte entries
  (8-byte big-endian fingerprint, 4-byte big-endian key);
- ``<prefix>:urls``: for the drop log, a hash of decimal key -> URL
  (``SIMHASH_REDIS_URLS = "full"``), or of key // 255 -> the 8-byte xxh3-64
  hashes of 255 URLs in key order (``"hash"``, compact: the drop log then names
  the kept page as ``xxh3:<hex>``);
- ``<prefix>:sketches``: a hash, decimal key -> the page's sketch
  (:mod:`scrapy_simhash.fingerprinting.signature`), which confirms a candidate:
  the script drops a page only when a stored one within k bits has a sketch that
  confirms it, by the rule of :func:`scrapy_simhash.is_duplicate` (mirrored
  exactly; ``tests/test_redis.py`` compares them on random pairs).

Packing a bucket's entries into one value keeps the cost near the in-process
figure (12 bytes per table instead of ~80 for a key or hash field per entry).
Each page costs one round trip: a Lua script (EVALSHA) probes every table and
inserts the fingerprint when nothing matched, atomically, so two processes that
see near-duplicate pages at the same moment cannot both keep them. In a Redis
Cluster (``SIMHASH_REDIS_CLUSTER``) the default template ``{%(spider)s}:simhash``
puts a crawl's keys in one hash slot, so the script stays one atomic call on one
master, and different crawls spread over the masters
(:mod:`scrapy_simhash.backends.redis_sharded` spreads one crawl's tables instead).

What a sick Redis can cost (:class:`RedisBackend`): no call blocks Scrapy's
thread longer than ``SIMHASH_REDIS_TIMEOUT`` to connect plus as long for the
answer; after a failure Redis is left alone for a hold-off (1 s, doubling to
5 s), so a hung server costs at most one timeout per hold-off. Pages kept
unchecked meanwhile, and pages a full Redis (``maxmemory``, ``noeviction``)
checked but could not store, are queued (``SIMHASH_REDIS_QUEUE``) and indexed
when it answers again; a page whose call timed out after Redis ran it is found
under its own URL then and not stored twice. What is lost: near-duplicates
among the pages of an outage are all kept (counted when they are indexed); pages
beyond the queue, or still queued when the crawl ends with Redis down, are never
indexed (counted, ERROR at close); in a cluster failover, writes the dead master
had not replicated yet (Redis replication is asynchronous), or the whole index
if its replica had not finished its first sync.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections import Counter, deque
from importlib import resources
from typing import Any, NamedTuple

import numpy as np
import xxhash

from scrapy_simhash.backends import BackendConfig, BackendError, Duplicate, hashed_url
from scrapy_simhash.extras import needs
from scrapy_simhash.fingerprinting import FINGERPRINT_VERSION
from scrapy_simhash.fingerprinting.signature import CONFIRM, SKETCH_BINS, Signature
from scrapy_simhash.index import ADD_MODES, Match, TableLayout

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
#: Entries as in 1, but URLs as packed hashes or tables in slots of their own:
#: versions that know only format 1 refuse to join.
FORMAT_VERSION_EXTENDED = 2
ENTRY_SIZE = 12
#: The script's arguments before the bucket fields (``data/redis_query_and_add.lua``).
FIXED_SCRIPT_ARGS = 8
MAX_KEY = 2**32 - 1
#: Average entries per bucket wanted at the expected index size: larger buckets
#: amortise Redis's ~60 bytes of per-field overhead, smaller ones scan faster
#: (the script compares a candidate in ~0.5 us; bench/results/redis.txt).
BUCKET_TARGET = 16
#: ``SIMHASH_REDIS_TIMEOUT``: seconds a Redis call may block Scrapy's thread to
#: connect, and as many for the answer.
DEFAULT_TIMEOUT = 0.5
#: ``SIMHASH_REDIS_QUEUE``: pages kept while Redis failed or was full that wait
#: to be indexed (each ~200 B of this process's memory).
DEFAULT_QUEUE_SIZE = 100_000
#: After a failed call, calls fail at once for a hold-off instead of each page
#: waiting out the timeout: 1 s, doubling with each failure, at most 5 s.
HOLDOFF_FIRST = 1.0
HOLDOFF_MAX = 5.0
#: Queued pages probed and inserted (one pipelined round trip) per page checked.
FLUSH_BATCH = 128
#: How an index keeps its URLs: "full" (a hash field per page) or "hash"
#: (compact: an 8-byte xxh3-64 hash per page, packed by URL_BLOCK pages; 255
#: hashes and Redis's 6-byte string header fill jemalloc's 2,048-byte class).
URL_FORMATS = ("full", "hash")
URL_BLOCK = 255

_ENTRY_DTYPE = np.dtype([("fp", ">u8"), ("key", ">u4")])
_MATCH_DTYPE = np.dtype([("fp", ">u8"), ("key", ">u4"), ("distance", "u1")])


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
        .joinpath("data/redis_query_and_add.lua")
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


class IndexMissingError(RuntimeError):
    """The index's metadata is gone from Redis (restart without persistence, deletion)."""


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
    try:
        tables = len(TableLayout.from_dict(info["layout"]).tables)
    except (KeyError, ValueError, TypeError):
        tables = 0
    keys.update(f"{prefix}:t{i}" for i in range(tables))
    return int(client.delete(*sorted(keys)))


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
        self.sketches_key = f"{prefix}:sketches"
        self.table_keys = [f"{prefix}:t{i}" for i in range(len(self._tables))]
        if bucket_bits is not None and not 1 <= bucket_bits <= 32:
            raise ValueError(f"bucket_bits must be from 1 to 32, got {bucket_bits!r}")
        self.bucket_bits = bucket_bits or self._default_bucket_bits()
        self.signature = ""
        self._script = client.register_script(_script_source())
        self.script_sha = self._script.sha
        self.keys: list[str] = []  # the script's KEYS, once open
        redis = import_redis()
        self._errors = (redis.RedisError, OSError)
        self._no_script = redis.exceptions.NoScriptError

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
            # versions before the compact URL format check only this field
            "format": FORMAT_VERSION
            if (self.url_format, self.PLACEMENT) == ("full", "one_slot")
            else FORMAT_VERSION_EXTENDED,
        }

    def open(self, *, reset: bool = False) -> int:
        """Create or join the index; return its size.

        Raises :class:`IndexMismatchError` naming what differs when the stored
        index has another k, layout, fingerprint version or entry format.
        """
        if reset:
            self.clear()
        identity = self._identity()
        fields = {name: json.dumps(value, sort_keys=True) for name, value in identity.items()}
        fields["bucket_bits"] = str(self.bucket_bits)
        fields["size"] = "0"
        fields["signature"] = self._signature(identity, self.bucket_bits)
        flat = [item for pair in fields.items() for item in pair]
        raw = self.client.eval(_INIT_SCRIPT, 1, self.meta_key, *flat)
        stored = {raw[i].decode(): raw[i + 1].decode() for i in range(0, len(raw), 2)}
        self._check(identity, stored)
        self.bucket_bits = int(stored["bucket_bits"])
        self.signature = stored["signature"]
        self.keys = [self.meta_key, self.urls_key, self.sketches_key, *self.table_keys]
        return int(stored.get("size", 0))

    @staticmethod
    def _signature(identity: dict[str, Any], bucket_bits: int) -> str:
        text = json.dumps([identity, bucket_bits], sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    def _check(self, identity: dict[str, Any], stored: dict[str, str]) -> None:
        # indexes from before the compact and sharded formats
        stored.setdefault("urls", json.dumps("full"))
        stored.setdefault("tables", json.dumps("one_slot"))
        missing = sorted({*identity, "bucket_bits", "signature", "size"} - set(stored))
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
        return clear_index(self.client, self.prefix, extra=self.table_keys)

    def __len__(self) -> int:
        return int(self.client.hget(self.meta_key, "size") or 0)

    # -- buckets -----------------------------------------------------------

    def _take(self, table: Any) -> int:
        """Leading permuted bits that name a bucket: at most the table's p, so a
        neighbour sharing p leading bits with the query shares its bucket."""
        return min(table.p, self.bucket_bits)

    def bucket_fields(self, fp: int) -> list[bytes]:
        """The bucket field of ``fp`` in each table."""
        fields = []
        for table in self._tables:
            take = self._take(table)
            bucket = table.permute(fp) >> (64 - take)
            fields.append(bucket.to_bytes((take + 7) // 8, "big"))
        return fields

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

        With a ``sketch``, a candidate within k counts only when the stored
        page's sketch confirms it (``signature.confirms``; ``if_new`` inserts
        when none did; a stored page without a sketch is never confirmed);
        without one every candidate counts (the index alone). Returns the matches found before inserting, sorted by (distance, key),
        the URL of the nearest (with ``url_format="hash"``, its :meth:`url_token`),
        and the new key (0 when nothing was inserted). Raises
        :class:`IndexFullError`, carrying the matches, when Redis refused the
        insertion for lack of memory.
        """
        fp = self._checked(fp, add, sketch)
        return self._answer(
            self._script(keys=self.keys, args=self.script_args(fp, url, add, sketch))
        )

    def _checked(self, fp: int, add: str, sketch: bytes = b"") -> int:
        if add not in ADD_MODES:
            raise ValueError(f"add must be one of {ADD_MODES}, not {add!r}")
        if not self.keys:
            raise RuntimeError("call open() before query_and_add()")
        fp = int(fp)
        if not 0 <= fp < 1 << 64:
            raise ValueError(f"fingerprint out of the unsigned 64-bit range: {fp!r}")
        if sketch and len(sketch) != SKETCH_BINS:
            raise ValueError(f"a sketch has {SKETCH_BINS} bytes, this one {len(sketch)}")
        return fp

    def run_batch(self, entries: list[tuple[int, str, str, bytes]]) -> list[Any]:
        """Probe and insert many ``(fp, url, add, sketch)`` in one pipelined round
        trip, each atomically; per entry, what :meth:`query_and_add` returns or
        the exception it would raise."""
        for attempt in range(2):
            pipe = self.pipeline()
            for fp, url, add, sketch in entries:
                pipe.evalsha(self.script_sha, len(self.keys), *self.keys,
                             *self.script_args(fp, url, add, sketch))
            replies = pipe.execute(raise_on_error=False)
            if attempt or not any(isinstance(r, self._no_script) for r in replies):
                break
            self.load_script()  # a restarted server, or a replica that took over
        results: list[Any] = []
        for reply in replies:
            try:
                if isinstance(reply, Exception):
                    raise reply
                results.append(self._answer(reply))
            except (IndexFullError, IndexMismatchError, IndexMissingError, *self._errors) as exc:
                results.append(exc)
        return results

    def _answer(self, reply: list[Any]) -> tuple[list[Match], str | None, int]:
        """Decode the script's reply; raise for its error statuses."""
        status, new_key, nearest_url, blob = reply
        if status == -1:
            raise IndexMissingError(
                f"The simhash index metadata {self.meta_key} vanished (Redis restarted "
                "without persistence, or someone deleted it)"
            )
        if status == -2:
            raise IndexMismatchError(
                f"The shared simhash index {self.prefix!r} was replaced by one with "
                f"another configuration (signature {new_key.decode()} instead of "
                f"{self.signature}) while this process was using it"
            )
        matches = self._decode_matches(blob)
        nearest = self.decode_url(nearest_url) if matches else None
        if status == -3:
            raise IndexFullError(
                f"Redis refused to store a page in {self.prefix!r}: out of memory "
                "(maxmemory with the noeviction policy)",
                matches,
                nearest,
            )
        return matches, nearest, new_key

    def slot_keys(self) -> list[str]:
        """The keys one script call touches, which a cluster needs in one slot."""
        return [self.meta_key, self.urls_key, self.sketches_key, *self.table_keys]

    def pipeline(self) -> Any:
        """A non-transactional pipeline to the node holding this index: redis-py's
        cluster pipelines refuse EVALSHA, and every key of the index is in one slot."""
        node_of = getattr(self.client, "get_node_from_key", None)
        if node_of is None:
            return self.client.pipeline(transaction=False)
        node = node_of(self.meta_key)
        return self.client.get_redis_connection(node).pipeline(transaction=False)

    def load_script(self) -> None:
        """Load the probe-and-insert script (into every master of a cluster)."""
        self.client.script_load(self._script.script)

    def script_args(self, fp: int, url: str, add: str, sketch: bytes = b"") -> list[Any]:
        """The arguments of the probe-and-insert script for one page."""
        stored_url = url or ""
        if self.url_format == "hash" and stored_url:
            stored_url = xxhash.xxh3_64_digest(stored_url.encode("utf-8", "surrogatepass"))
        block = URL_BLOCK if self.url_format == "hash" else 0
        args = [int(fp).to_bytes(8, "big"), self.k, add, stored_url, self.signature, block,
                sketch, CONFIRM]
        args.extend(self.bucket_fields(int(fp)))
        return args

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

    @staticmethod
    def _decode_matches(blob: bytes) -> list[Match]:
        if not blob:
            return []
        rows = np.frombuffer(blob, dtype=_MATCH_DTYPE)
        out = [Match(int(r["key"]), int(r["fp"]), int(r["distance"])) for r in rows]
        out.sort(key=lambda m: (m.distance, m.key))
        return out

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
        if not self.keys:
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
                field = int(sorted_buckets[start]).to_bytes(width, "big")
                args += [field, data[start * ENTRY_SIZE : end * ENTRY_SIZE]]
                if len(args) >= 2 * batch:
                    append(keys=[self.table_keys[table]], args=args)
                    args = []
            if args:
                append(keys=[self.table_keys[table]], args=args)
        if urls is not None and self.url_format == "hash":
            self._add_url_hashes(int(keys[0]), urls)
        elif urls is not None:
            self._hset_by_key(self.urls_key, keys, urls, batch)
        if sketches is not None:
            self._hset_by_key(self.sketches_key, keys, sketches, batch)
        return keys

    def _hset_by_key(self, name: str, keys: np.ndarray, values: Any, batch: int) -> None:
        """``values[i]`` under field ``keys[i]`` of hash ``name``, ``batch`` fields a command."""
        pipe = self.client.pipeline(transaction=False)
        for start in range(0, len(keys), batch):
            chunk = dict(zip(map(str, keys[start : start + batch].tolist()),
                             values[start : start + batch]))
            pipe.hset(name, mapping=chunk)
        pipe.execute()

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


# Creates the metadata hash unless it exists, atomically; returns what is stored.
_INIT_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV))
end
return redis.call('HGETALL', KEYS[1])
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

_APPEND_SCRIPT = """
for i = 1, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[1], ARGV[i]) or ''
  redis.call('HSET', KEYS[1], ARGV[i], old .. ARGV[i + 1])
end
return 0
"""


class RedisBackend:
    """The ``SIMHASH_BACKEND = "redis"`` backend: one shared index per spider name.

    Every Redis call runs on Scrapy's thread, so each is bounded by
    ``SIMHASH_REDIS_TIMEOUT`` (connect, then answer) with no retries. After a
    failure, calls fail at once for a hold-off (1 s, doubling up to 5 s) before
    Redis is tried again. A page kept unchecked meanwhile, or checked but not
    stored because Redis is full, waits in a bounded queue
    (``SIMHASH_REDIS_QUEUE``) and is probed and inserted when Redis answers
    again (a batch per page checked, the rest at close): a queued page that
    turns out to be a near-duplicate of one stored meanwhile was kept anyway and
    is only counted. :meth:`stats` counts all of it.
    """

    def __init__(
        self,
        client: Any,
        *,
        k: int = 3,
        layout: Any = "auto",
        expected_size: int = 1 << 20,
        key_template: str = "%(spider)s:simhash",
        reset: bool = False,
        where: str = "redis",
        url_format: str = "full",
        queue_size: int = DEFAULT_QUEUE_SIZE,
        sharded: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.client = client
        self.sharded = sharded
        self.timeout = timeout
        self.k = k
        self.layout = layout
        self.expected_size = expected_size
        self.key_template = key_template
        self.reset = reset
        self.where = where
        self.url_format = url_format
        self.queue_size = queue_size
        self.index: RedisSimhashIndex | None = None
        self.counts: Counter[str] = Counter()
        self._size = 0
        self._pending: deque[tuple[int, str, str, bytes]] = deque()
        self._retry_at = 0.0  # no call before this time (monotonic), after a failure
        self._flush_after = 0.0  # no queued page retried before this time
        self._holdoff = 0.0
        self._failing_since: float | None = None
        self._full_since: float | None = None
        self._overflow_warned = False
        redis = import_redis()
        self._redis_errors = (redis.RedisError, OSError, redis.exceptions.RedisClusterException)

    @classmethod
    def from_config(cls, config: BackendConfig) -> RedisBackend:
        """Connect (``SIMHASH_REDIS_URL``/``REDIS_URL``, ``REDIS_PARAMS``,
        ``SIMHASH_REDIS_CLUSTER``) and ping.

        Raises :class:`BackendError` when Redis cannot be reached, so that the
        crawl stops at start-up with the reason.
        """
        try:
            redis = import_redis()
        except ImportError as exc:  # one line at start-up, not a traceback
            raise BackendError(str(exc)) from None
        where = _safe_url(config.redis_url)
        errors = (redis.RedisError, OSError, redis.exceptions.RedisClusterException)
        what = "the Redis Cluster" if config.redis_cluster else "Redis"
        try:
            client = connect(config)
            if not config.redis_cluster:
                # (a cluster client read the slot map from a node; PING would ask every node)
                try:
                    client.ping()
                except errors:
                    client.close()
                    raise
        except (TypeError, ValueError) as exc:
            raise BackendError(
                f"Invalid Redis settings for {where} (SIMHASH_REDIS_URL, REDIS_PARAMS): {exc}"
            ) from exc
        except errors as exc:
            raise BackendError(
                f"Cannot reach {what} at {where} (SIMHASH_REDIS_URL): {exc}"
            ) from exc
        return cls(
            client,
            k=config.max_distance,
            layout=config.layout,
            expected_size=config.expected_pages,
            key_template=config.redis_key,
            reset=config.reset,
            where=where,
            url_format=config.redis_urls,
            queue_size=config.redis_queue,
            sharded=config.redis_sharded,
            timeout=config.redis_timeout,
        )

    # -- opening -------------------------------------------------------------

    def open(self, spider_name: str) -> int:
        """Join (or create) the index of this spider; return its size."""
        prefix = self.key_template % {"spider": spider_name}
        try:
            layout = self._joined_layout(prefix) or TableLayout.resolve(
                self.layout, self.k, self.expected_size
            )
            options: dict[str, Any] = {}
            kind: type[RedisSimhashIndex] = RedisSimhashIndex
            if self.sharded:
                from scrapy_simhash.backends.redis_sharded import ShardedRedisSimhashIndex

                kind = ShardedRedisSimhashIndex
                options["lock_wait"] = self.timeout
            index = kind(
                self.client,
                prefix,
                layout,
                expected_size=self.expected_size,
                url_format=self.url_format,
                **options,
            )
            self._check_one_slot(index)
            if self.reset:
                logger.warning(
                    "SIMHASH_RESET: deleting the shared simhash index %(prefix)s at %(where)s",
                    {"prefix": prefix, "where": self.where},
                )
            self._size = index.open(reset=self.reset)
        except IndexMismatchError as exc:
            raise BackendError(str(exc)) from exc
        except self._redis_errors as exc:
            hint = ""
            if "MOVED" in str(exc):
                hint = " (this is a Redis Cluster: set SIMHASH_REDIS_CLUSTER = True)"
            raise BackendError(
                f"Cannot open the simhash index {prefix!r} at {self.where}: {exc}{hint}"
            ) from exc
        self.index = index
        logger.info(
            "Joined the shared simhash index %(prefix)s at %(where)s: %(size)d pages, "
            "%(tables)d tables, %(bits)d bucket bits",
            {
                "prefix": prefix,
                "where": self.where,
                "size": self._size,
                "tables": len(index.table_keys),
                "bits": index.bucket_bits,
            },
        )
        return self._size

    def _check_one_slot(self, index: RedisSimhashIndex) -> None:
        """In a Redis Cluster, the script's keys must share a hash slot."""
        keyslot = getattr(self.client, "keyslot", None)
        if keyslot is None:
            return
        slots = {keyslot(key) for key in index.slot_keys()}
        if len(slots) > 1:
            raise BackendError(
                f"SIMHASH_REDIS_KEY {self.key_template!r} spreads the keys of one crawl "
                "over several hash slots of the Redis Cluster; put a hash tag in it, "
                "such as '{%(spider)s}:simhash'"
            )

    def _joined_layout(self, prefix: str) -> Any:
        """With ``SIMHASH_LAYOUT = "auto"``, the layout of an existing index of the
        same k, whatever ``SIMHASH_EXPECTED_PAGES`` this process would plan for."""
        if not TableLayout.is_auto(self.layout) or self.reset:
            return None
        stored = self.client.hget(f"{prefix}:meta", "layout")
        try:
            layout = TableLayout.from_dict(json.loads(stored)) if stored else None
        except (ValueError, TypeError):
            return None
        return layout if layout is not None and layout.k == self.k else None

    # -- probe and insert ----------------------------------------------------

    def query_and_add(
        self, signature: Signature, url: str, *, add: str = "if_new"
    ) -> Duplicate | None:
        """The nearest stored duplicate (within k bits, confirmed by its sketch),
        or None; inserts per ``add``.

        Raises :class:`BackendError` when Redis failed or is held off; the page
        is then queued, to be indexed when Redis answers again.
        """
        fingerprint, sketch = signature.fingerprint, signature.sketch
        index = self.index
        if index is None:
            raise BackendError("the Redis simhash backend is not open")
        now = time.monotonic()
        if now < self._retry_at:
            self._enqueue(fingerprint, url, add, sketch)
            raise BackendError(
                f"Redis at {self.where} has been failing for {now - self._failing_since:.1f} s "
                f"(next attempt in {self._retry_at - now:.1f} s); the page was queued"
            )
        queued = len(self._pending)
        try:
            matches, nearest_url, new_key = self._probe(index, fingerprint, url, add, sketch)
        except IndexMismatchError as exc:
            self._failed()
            raise BackendError(str(exc)) from exc
        except self._redis_errors as exc:
            self._failed()
            self._enqueue(fingerprint, url, add, sketch)
            raise BackendError(f"Redis at {self.where}: {exc}; the page was queued") from exc
        self._answered(queued)
        if new_key:
            self._size = int(new_key)
        if self._pending:
            try:
                self._flush(index, FLUSH_BATCH)
            except self._redis_errors as exc:  # this page was checked: the next one says
                logger.debug("Indexing queued pages failed: %(error)s", {"error": exc})
                self._flush_after = time.monotonic() + HOLDOFF_FIRST
        if not matches:
            return None
        best = matches[0]
        return Duplicate(nearest_url or "", best.fingerprint, best.distance)

    def _probe(
        self, index: RedisSimhashIndex, fp: int, url: str, add: str, sketch: bytes
    ) -> tuple[list[Match], str | None, int]:
        try:
            try:
                return index.query_and_add(fp, url, add=add, sketch=sketch)
            except IndexMissingError as exc:
                logger.warning(
                    "%(error)s; starting it again empty at %(where)s",
                    {"error": exc, "where": self.where},
                )
                index.open()
                return index.query_and_add(fp, url, add=add, sketch=sketch)
        except IndexFullError as exc:
            # checked against what is stored; stored later, when Redis has room
            self._became_full(exc)
            if add == "always" or not exc.matches:
                self.counts["unstored_count"] += 1
                self._enqueue(fp, url, add, sketch)
            return exc.matches, exc.nearest_url, 0

    # -- failures, hold-off and the queue --------------------------------------

    def _failed(self) -> None:
        now = time.monotonic()
        if self._failing_since is None:
            self._failing_since = now
        self._holdoff = min(HOLDOFF_MAX, self._holdoff * 2 or HOLDOFF_FIRST)
        self._retry_at = now + self._holdoff

    def _answered(self, queued: int) -> None:
        if self._failing_since is None:
            return
        logger.warning(
            "Redis at %(where)s answers again after %(seconds).1f s; %(queued)d pages kept "
            "meanwhile are being indexed",
            {
                "where": self.where,
                "seconds": time.monotonic() - self._failing_since,
                "queued": queued,
            },
        )
        self._failing_since = None
        self._holdoff = 0.0
        self._retry_at = 0.0

    def _became_full(self, exc: IndexFullError) -> None:
        now = time.monotonic()
        if self._full_since is None:
            logger.warning(
                "%(error)s: pages are checked against the stored ones, but new ones are "
                "queued (SIMHASH_REDIS_QUEUE) instead of stored until Redis has room",
                {"error": exc},
            )
            self._full_since = now
        # queued pages are retried after a hold-off, not with every page
        self._flush_after = now + HOLDOFF_FIRST

    def _enqueue(self, fp: int, url: str, add: str, sketch: bytes) -> None:
        if add == "never":
            return
        if len(self._pending) >= self.queue_size:
            self.counts["queue_overflow_count"] += 1
            if not self._overflow_warned:
                self._overflow_warned = True
                logger.warning(
                    "The queue of pages waiting for Redis at %(where)s is full "
                    "(SIMHASH_REDIS_QUEUE = %(size)d): further pages kept meanwhile will "
                    "not be indexed (simhash/redis/queue_overflow_count)",
                    {"where": self.where, "size": self.queue_size},
                )
            return
        self._pending.append((int(fp), url, add, sketch))
        self.counts["queued_count"] += 1

    def _flush(self, index: RedisSimhashIndex, limit: int | None) -> None:
        """Probe and insert up to ``limit`` queued pages (all with None), oldest
        first, one pipelined round trip a batch; those Redis refused stay queued."""
        while self._pending and time.monotonic() >= self._flush_after:
            batch = [self._pending[i] for i in range(min(len(self._pending), limit or 512))]
            results = index.run_batch(batch)
            kept: list[tuple[int, str, str, bytes]] = []
            for entry, result in zip(batch, results):
                self._pending.popleft()
                if not self._reindexed(index, entry, result):
                    kept.append(entry)
            self._pending.extendleft(reversed(kept))
            if kept or limit is not None:
                return

    def _reindexed(
        self, index: RedisSimhashIndex, entry: tuple[int, str, str, bytes], result: Any
    ) -> bool:
        """Count one queued page's answer; False when it must stay queued."""
        if isinstance(result, Exception):
            # full, or metadata gone or replaced (the next probe says so), or failing
            logger.debug("Queued page refused by Redis: %(error)r", {"error": result})
            full = isinstance(result, IndexFullError)
            self._flush_after = time.monotonic() + (HOLDOFF_FIRST if full else HOLDOFF_MAX)
            return False
        _, nearest, new_key = result
        url = entry[1]
        if new_key:
            self.counts["reindexed_count"] += 1
            self._size = max(self._size, int(new_key))
            if self._full_since is not None:
                logger.warning("Redis at %(where)s stores pages again", {"where": self.where})
                self._full_since = None
        elif url and nearest == index.url_token(url):
            # its first call had run although its answer never came back
            self.counts["reindexed_already_stored_count"] += 1
        else:
            self.counts["reindexed_duplicate_count"] += 1
        return True

    # -- closing ---------------------------------------------------------------

    def close(self) -> None:
        """Index what is still queued (one attempt), then close the connection;
        the shared keys stay (see ``SIMHASH_RESET``)."""
        index, self.index = self.index, None
        if getattr(index, "lease_lost", 0):
            self.counts["lease_lost_count"] = index.lease_lost
        try:
            if index is not None:
                if self._pending:
                    self._flush_after = 0.0
                    self._flush(index, None)
                self._size = len(index)
        except self._redis_errors as exc:
            logger.debug("Redis at close: %(error)s", {"error": exc})
        finally:
            self.counts["unindexed_count"] = len(self._pending)
            if self._pending:
                logger.error(
                    "%(count)d pages kept while Redis at %(where)s was failing or full were "
                    "never indexed: later crawls sharing the index will not know them "
                    "(simhash/redis/unindexed_count)",
                    {"count": len(self._pending), "where": self.where},
                )
            self.client.close()

    def stats(self) -> dict[str, int]:
        """Counters of the queue of pages Redis could not take at once: the
        ``simhash/redis/`` stats."""
        counts = {**self.counts, "queue_length": len(self._pending)}
        if getattr(self.index, "lease_lost", 0):  # sharded tables, while open
            counts["lease_lost_count"] = self.index.lease_lost
        return {f"redis/{name}": value for name, value in counts.items()}

    def __len__(self) -> int:
        """The index size (read from Redis while open, else the last known)."""
        if self.index is not None and self._failing_since is None:
            try:
                self._size = len(self.index)
            except self._redis_errors:
                pass
        return self._size


def connect(config: BackendConfig) -> Any:
    """The redis-py client the settings describe (``SIMHASH_REDIS_URL``,
    ``REDIS_PARAMS``, ``SIMHASH_REDIS_CLUSTER``, ``SIMHASH_REDIS_TIMEOUT``): the one
    place a crawl's Redis connection is made (the index and the URL rules share it)."""
    redis = import_redis()
    params = connection_params(config.redis_params, config.redis_timeout)
    if config.redis_cluster:
        return redis.RedisCluster.from_url(config.redis_url, **params)
    return redis.Redis.from_url(config.redis_url, **params)


def connection_params(user_params: dict[str, Any], timeout: float) -> dict[str, Any]:
    """redis-py client arguments: the user's ``REDIS_PARAMS`` with this backend's
    bounds on top, because every call blocks Scrapy's thread: ``timeout``
    seconds to connect and as many for an answer, and no retries."""
    import_redis()
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    params = dict(user_params)
    params.pop("retry_on_timeout", None)
    params.update(
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
        decode_responses=False,  # the script returns packed bytes
    )
    return params


def _safe_url(url: str) -> str:
    """The URL without its password, for messages."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[-1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


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
    if info.get("tables", "one_slot") == "sharded":
        base = prefix.replace("{", "").replace("}", "")
        table = f"{{{base}:t0}}:table"
    else:
        table = f"{prefix}:t0"
    blobs = client.hgetall(table).values()
    entries = np.frombuffer(b"".join(blobs), dtype=_ENTRY_DTYPE)
    entries = entries[np.argsort(entries["key"], kind="stable")]
    keys = entries["key"].astype(np.uint64)
    fingerprints = entries["fp"].astype(np.uint64)
    raw_sketches = client.hgetall(f"{prefix}:sketches")
    sketches = np.zeros((len(keys), SKETCH_BINS), dtype=np.uint8)
    for row, key in enumerate(keys.tolist()):
        value = raw_sketches.get(str(key).encode())
        if value is not None and len(value) == SKETCH_BINS:
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
