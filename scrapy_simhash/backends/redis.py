"""A simhash index shared through Redis, for crawls spread over several processes.

The index keeps the in-process permuted-table layout (:mod:`scrapy_simhash.index.layout`):
every fingerprint is stored once per table, in a bucket named by the leading
bits of its permuted form, so a fingerprint within k bits of a query shares the
query's bucket in at least one table. Redis holds, under the prefix
``SIMHASH_REDIS_KEY % {"spider": name}``:

- ``<prefix>:meta``: a hash with k, the layout, the fingerprint version, the
  entry format, the bucket width and ``size`` (the last key handed out);
- ``<prefix>:t<i>``: one hash per table, bucket field -> packed 12-byte entries
  (8-byte big-endian fingerprint, 4-byte big-endian key);
- ``<prefix>:urls``: a hash, decimal key -> URL, for the drop log;
- ``<prefix>:sketches``: a hash, decimal key -> the page's sketch
  (:mod:`scrapy_simhash.fingerprinting.signature`), which confirms a candidate.

Packing a bucket's entries into one value keeps the cost near the in-process
figure (12 bytes per table instead of ~80 for a key or hash field per entry).
Each page costs one round trip: a Lua script (EVALSHA) probes every table,
confirms each candidate by its sketch (the rule of
:func:`scrapy_simhash.is_duplicate`, mirrored exactly; a test compares them) and
inserts the page when nothing was confirmed, atomically, so two processes that
see near-duplicate pages at the same moment cannot both keep them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np

from scrapy_simhash.backends import BackendError, Duplicate
from scrapy_simhash.fingerprinting import FINGERPRINT_VERSION
from scrapy_simhash.fingerprinting.signature import CONFIRM, SKETCH_BINS, Signature
from scrapy_simhash.index import ADD_MODES, Match, TableLayout

if TYPE_CHECKING:
    from scrapy_simhash.settings import SimhashSettings

logger = logging.getLogger(__name__)

#: 2: a sketch hash beside the tables; the script confirms candidates by it.
FORMAT_VERSION = 2
ENTRY_SIZE = 12
MAX_KEY = 2**32 - 1
#: Average entries per bucket wanted at the expected index size: larger buckets
#: amortise Redis's ~60 bytes of per-field overhead, smaller ones scan faster
#: (the script compares a candidate in ~0.5 us; bench/results/redis.txt).
BUCKET_TARGET = 16
#: scrapy-redis's connection defaults (its ``REDIS_PARAMS``), merged under the user's.
REDIS_PARAMS_DEFAULTS = {"socket_timeout": 30, "socket_connect_timeout": 30}
#: After a failed call, calls fail fast for this many seconds instead of each
#: page waiting for redis-py's retries against a dead server.
FAILURE_HOLDOFF = 5.0

_INSTALL_HINT = "the Redis backend needs the redis package: pip install 'scrapy-simhash[redis]'"
_ENTRY_DTYPE = np.dtype([("fp", ">u8"), ("key", ">u4")])
_MATCH_DTYPE = np.dtype([("fp", ">u8"), ("key", ">u4"), ("distance", "u1")])


def import_redis() -> Any:
    """Import redis-py, or fail with the name of the extra that provides it."""
    try:
        import redis
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    return redis


def _script_source() -> str:
    return (
        resources.files("scrapy_simhash")
        .joinpath("data/redis_query_and_add.lua")
        .read_text(encoding="utf-8")
    )


class IndexMismatchError(ValueError):
    """The shared index was built with another k, layout or fingerprint version."""


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

    def __init__(
        self,
        client: Any,
        prefix: str,
        layout: Any,
        *,
        expected_size: int = 1 << 20,
        fingerprint_version: int = FINGERPRINT_VERSION,
        bucket_bits: int | None = None,
    ) -> None:
        self.client = client
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
        self._keys: list[str] = []

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
            "format": FORMAT_VERSION,
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
        self._keys = [self.meta_key, self.urls_key, self.sketches_key, *self.table_keys]
        return int(stored.get("size", 0))

    @staticmethod
    def _signature(identity: dict[str, Any], bucket_bits: int) -> str:
        text = json.dumps([identity, bucket_bits], sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    def _check(self, identity: dict[str, Any], stored: dict[str, str]) -> None:
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

        With a ``sketch`` a candidate within k counts only when the stored
        page's sketch confirms it (``signature.confirms``; ``if_new`` inserts
        when none did); without one every candidate counts. Returns the matches
        found before inserting, sorted by (distance, key), the URL of the
        nearest, and the new key (0 when nothing was inserted).
        """
        if add not in ADD_MODES:
            raise ValueError(f"add must be one of {ADD_MODES}, not {add!r}")
        if not self._keys:
            raise RuntimeError("call open() before query_and_add()")
        fp = int(fp)
        if not 0 <= fp < 1 << 64:
            raise ValueError(f"fingerprint out of the unsigned 64-bit range: {fp!r}")
        if sketch and len(sketch) != SKETCH_BINS:
            raise ValueError(f"a sketch has {SKETCH_BINS} bytes, this one {len(sketch)}")
        args = [fp.to_bytes(8, "big"), self.k, add, url or "", self.signature, sketch, CONFIRM]
        args.extend(self.bucket_fields(fp))
        status, new_key, nearest_url, blob, _unconfirmed = self._script(
            keys=self._keys, args=args
        )
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
        return matches, (nearest_url.decode("utf-8", "replace") if matches else None), new_key

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
        value = self.client.hget(self.urls_key, str(int(key)))
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
        """Append many fingerprints without probing (like ``add="always"``).

        For loading a known set (an earlier crawl, a benchmark). Not atomic
        against concurrent probes: load before the crawl starts. Returns the keys.
        """
        if not self._keys:
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
        for values, target in ((urls, self.urls_key), (sketches, self.sketches_key)):
            if values is None:
                continue
            pipe = self.client.pipeline(transaction=False)
            for start in range(0, n, batch):
                chunk = dict(zip(map(str, keys[start : start + batch].tolist()),
                                 values[start : start + batch]))
                pipe.hset(target, mapping=chunk)
            pipe.execute()
        return keys


# Creates the metadata hash unless it exists, atomically; returns what is stored.
_INIT_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV))
end
return redis.call('HGETALL', KEYS[1])
"""

_APPEND_SCRIPT = """
for i = 1, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[1], ARGV[i]) or ''
  redis.call('HSET', KEYS[1], ARGV[i], old .. ARGV[i + 1])
end
return 0
"""


class RedisBackend:
    """The ``SIMHASH_BACKEND = "redis"`` backend: one shared index per spider name."""

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
    ) -> None:
        self.client = client
        self.k = k
        self.layout = layout
        self.expected_size = expected_size
        self.key_template = key_template
        self.reset = reset
        self.where = where
        self.index: RedisSimhashIndex | None = None
        self._size = 0
        self._failed_at: float | None = None
        redis = import_redis()
        self._redis_errors = (redis.RedisError, OSError)

    @classmethod
    def from_config(cls, config: SimhashSettings) -> RedisBackend:
        """Connect (``SIMHASH_REDIS_URL``/``REDIS_URL``, ``REDIS_PARAMS``) and ping.

        Raises :class:`BackendError` when Redis cannot be reached, so that the
        crawl stops at start-up with the reason.
        """
        redis = import_redis()
        params = dict(REDIS_PARAMS_DEFAULTS)
        if int(redis.__version__.split(".")[0]) < 6:
            params["retry_on_timeout"] = True  # redis-py 6+ retries timeouts by default
        params.update(config.redis_params)
        params["decode_responses"] = False  # the script returns packed bytes
        where = _safe_url(config.redis_url)
        try:
            client = redis.Redis.from_url(config.redis_url, **params)
        except (TypeError, ValueError) as exc:
            raise BackendError(f"Invalid Redis settings for {where}: {exc}") from exc
        try:
            client.ping()
        except (redis.RedisError, OSError) as exc:
            client.close()
            raise BackendError(
                f"Cannot reach Redis at {where} (SIMHASH_REDIS_URL / REDIS_URL): {exc}"
            ) from exc
        return cls(
            client,
            k=config.max_distance,
            layout=config.layout,
            expected_size=config.expected_pages,
            key_template=config.redis_key,
            reset=config.reset,
            where=where,
        )

    def open(self, spider_name: str) -> int:
        """Join (or create) the index of this spider; return its size."""
        prefix = self.key_template % {"spider": spider_name}
        try:
            layout = self._joined_layout(prefix) or TableLayout.resolve(
                self.layout, self.k, self.expected_size
            )
            index = RedisSimhashIndex(
                self.client, prefix, layout, expected_size=self.expected_size
            )
            if self.reset:
                logger.warning(
                    "SIMHASH_RESET: deleting the shared simhash index %(prefix)s at %(where)s",
                    {"prefix": prefix, "where": self.where},
                )
            self._size = index.open(reset=self.reset)
        except IndexMismatchError as exc:
            raise BackendError(str(exc)) from exc
        except self._redis_errors as exc:
            raise BackendError(
                f"Cannot open the simhash index {prefix!r} at {self.where}: {exc}"
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

    def query_and_add(
        self, signature: Signature, url: str, *, add: str = "if_new"
    ) -> Duplicate | None:
        """The nearest stored duplicate (within k bits, confirmed by its
        sketch), or None; inserts per ``add``."""
        fingerprint, sketch = signature.fingerprint, signature.sketch
        index = self.index
        if index is None:
            raise BackendError("the Redis simhash backend is not open")
        now = time.monotonic()
        if self._failed_at is not None and now - self._failed_at < FAILURE_HOLDOFF:
            raise BackendError(
                f"Redis at {self.where} failed {now - self._failed_at:.1f} s ago; "
                f"next attempt after {FAILURE_HOLDOFF:g} s"
            )
        try:
            try:
                matches, nearest_url, new_key = index.query_and_add(fingerprint, url, add=add, sketch=sketch)
            except IndexMissingError as exc:
                logger.warning(
                    "%(error)s; starting it again empty at %(where)s",
                    {"error": exc, "where": self.where},
                )
                index.open()
                matches, nearest_url, new_key = index.query_and_add(fingerprint, url, add=add, sketch=sketch)
        except IndexMismatchError as exc:
            self._failed_at = now
            raise BackendError(str(exc)) from exc
        except self._redis_errors as exc:
            self._failed_at = time.monotonic()
            raise BackendError(f"Redis at {self.where}: {exc}") from exc
        if self._failed_at is not None:
            logger.warning(
                "Redis at %(where)s answers again after %(seconds).1f s; pages in between "
                "were not checked (simhash/backend_error_count)",
                {"where": self.where, "seconds": time.monotonic() - self._failed_at},
            )
            self._failed_at = None
        if new_key:
            self._size = int(new_key)
        if not matches:
            return None
        best = matches[0]
        return Duplicate(nearest_url or "", best.fingerprint, best.distance)

    def close(self) -> None:
        """Close the connection; the shared keys stay (see ``SIMHASH_RESET``)."""
        index, self.index = self.index, None
        try:
            if index is not None:
                self._size = len(index)
        except self._redis_errors as exc:
            logger.debug("Could not read the index size at close: %(error)s", {"error": exc})
        finally:
            self.client.close()

    def __len__(self) -> int:
        """The index size (read from Redis while open, else the last known)."""
        if self.index is not None and self._failed_at is None:
            try:
                self._size = len(self.index)
            except self._redis_errors:
                pass
        return self._size


def _safe_url(url: str) -> str:
    """The URL without its password, for messages."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[-1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))
