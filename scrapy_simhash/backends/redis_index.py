"""A simhash index shared through Redis: its keys, and a probe and insert as one decision.

Redis keeps the index as a **log**; every crawler process keeps the permuted
tables itself (an in-process :class:`~scrapy_simhash.index.SimhashIndex` fed from
the log), so Redis never looks up a bucket. Under the prefix
``SIMHASH_REDIS_KEY % {"spider": name}`` (format 4, :data:`FORMAT_VERSION`):

- ``<prefix>:meta``: a hash with k, the layout, the fingerprint version, the
  format, the URL format, the placement (``one_slot``), ``signature`` (a digest
  of all of these), ``epoch`` (random, drawn when the index is created: a
  process that finds another one knows the index it joined was lost and created
  again) and ``size`` (the last key handed out);
- ``<prefix>:log:<n>``: strings of :data:`LOG_BLOCK` (2^20) fingerprints, 8 bytes
  big-endian each, in key order: key ``q`` at byte ``((q - 1) % LOG_BLOCK) * 8``
  of block ``(q - 1) // LOG_BLOCK``;
- ``<prefix>:sketches:<n>``: the sketches
  (:mod:`scrapy_simhash.fingerprinting.signature`, 96 bytes each) in key order,
  :data:`SKETCH_BLOCK` (10,922, 1 MiB) a string, the same way; a page stored
  without one has zeros there, or nothing. No script reads them;
- ``<prefix>:urls``: for the drop log, a hash of decimal key -> URL
  (``SIMHASH_REDIS_URLS = "full"``), or of key // 255 -> the 8-byte xxh3-64
  hashes of 255 URLs in key order (``"hash"``, compact: the drop log then names
  the kept page as ``xxh3:<hex>``).

Formats 1 to 3 (the tables themselves in Redis) are refused with a message
saying to clear them; format 3 lives on for one crawl's tables spread over a
cluster's masters (:mod:`scrapy_simhash.backends.redis_buckets`,
:mod:`scrapy_simhash.backends.redis_sharded`).

A new page costs one round trip (two when candidates had to be confirmed), a drop
two (the candidates' sketches, the kept page's URL) (``data/redis_log_insert.lua``): the
process probes its tables, fetches (one ``GETRANGE`` each, pipelined with a
check of the metadata) the sketches of at most :data:`CANDIDATE_CAP` candidates
within k (nearest first) and confirms them with
:func:`~scrapy_simhash.fingerprinting.signature.confirms_many`, the one rule every
backend uses. A duplicate ends there. Otherwise a small script appends the page
only if none of the log's entries past what this process has read (its tail) is
within k bits and the index is the one joined, and returns that tail either
way, so the process stays in sync in the same call; when an entry is within k,
another writer stored a near page meanwhile and the process probes again with
it (``redis/conflict_count``). So two processes that see near-duplicate pages at
the same moment cannot both keep them. A tail longer than :data:`TAIL_CAP`
entries is not read by the script: the process reads the log first, in
``GETRANGE``\\ s of 1 MiB. A query that stores nothing (``add="never"``) reads the
tail first (the same script, reading only). In a Redis Cluster
(``SIMHASH_REDIS_CLUSTER``) the default template ``{%(spider)s}:simhash`` puts a
crawl's keys in one hash slot, so the script stays one atomic call on one master,
and different crawls spread over the masters.

No call grows with what is stored: the script compares at most
:data:`TAIL_CAP` entries; at most :data:`CANDIDATE_CAP` candidates are confirmed
per page (the others are not examined: a page is never dropped for them, a copy
of one may be kept), and the probe of the local tables is bounded the same way
(:meth:`~scrapy_simhash.index.SimhashIndex.query_keys`); a page is not stored
when :data:`SAME_FINGERPRINT_CAP` stored pages already have its exact
fingerprint (pages that differ only in what the fingerprint leaves out, such as
numbers: it is kept, and a later copy of it may be kept too). Missing a
duplicate is the price; dropping a distinct page never is. The price of the
design: every crawler process holds the tables of the whole index in memory, as
the in-process backend does, and a process joining an index reads its log.

At start, every command a crawl needs is run once on the index's keys, changing
nothing (:meth:`RedisIndexBase.check_permissions`): a Redis ACL user that may
not run one is refused in one line naming the command and the user. An index
that vanishes mid-crawl (FLUSHALL, eviction, a restart without persistence, a
failover to a replica that had not synced) is noticed by the next page (its
metadata gone, or its epoch changed), created again (this process's tables
emptied), counted (``redis/index_lost_count``), logged as an ERROR then and at
close; the crawl finishes as ``simhash_index_lost``, and the pages queued
meanwhile are indexed into the new index.

The backend a crawl uses (its timeouts, hold-offs and queue) is
:mod:`scrapy_simhash.backends.redis`; this module knows nothing of Scrapy.
"""

from __future__ import annotations

import hashlib
import json
import logging
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
from scrapy_simhash.index import ADD_MODES, Match, SimhashIndex, TableLayout

logger = logging.getLogger(__name__)

#: The Redis layout of the one-slot index: 1 and 2 (a probe-and-insert script
#: that confirmed sketches itself) and 3 (the tables as buckets in Redis) are
#: refused; 4 keeps a log of fingerprints, the tables in each process.
FORMAT_VERSION = 4
#: At most this many candidates within k (nearest first) are confirmed per
#: probe; the others are not examined, so a page is never dropped for them (a
#: copy of one of them may be kept: the probes counted, ``redis/unexamined_count``).
CANDIDATE_CAP = 64
#: A page is not stored when this many stored pages already have exactly its
#: fingerprint (pages that differ only in what the fingerprint leaves out,
#: such as numbers): it is kept, and a later copy of it may be kept too
#: (``redis/crowded_count``).
SAME_FINGERPRINT_CAP = 64
#: Probes of a page before giving up when other writers keep storing pages
#: within k of it between the probe and the insert.
MAX_ATTEMPTS = 16
#: How an index keeps its URLs: "full" (a hash field per page) or "hash"
#: (compact: an 8-byte xxh3-64 hash per page, packed by URL_BLOCK pages; 255
#: hashes and Redis's 6-byte string header fill jemalloc's 2,048-byte class).
URL_FORMATS = ("full", "hash")
URL_BLOCK = 255
#: Fingerprints a log string holds (8 MiB): Redis strings stay far below 512 MB.
LOG_BLOCK = 1 << 20
#: Sketches a string holds (1 MiB of 96-byte sketches).
SKETCH_BLOCK = 10922
#: Tail entries the insert script reads and compares at most; a process
#: further behind reads the log itself first.
TAIL_CAP = 1024
#: Candidates' sketches at most this many slots apart are read in one GETRANGE
#: (the gap read for nothing: at most 7 x 96 bytes).
SPAN_GAP = 8
#: Log entries read per GETRANGE when a process reads the log (1 MiB).
SYNC_CHUNK = 1 << 17
#: Bytes a command of ``read_index_pages`` reads of a log or sketch block.
READ_CHUNK = 1 << 20

_NO_SKETCH = bytes(SKETCH_BINS)
#: What the insert script is asked to do for each ``add`` mode.
_SCRIPT_MODES = {"if_new": "if_new", "always": "always", "never": "read"}


#: Format 3 (the tables in Redis; now the sharded placement only): a bucket
#: entry is an 8-byte fingerprint and a 4-byte key, sketches are packed 255 a
#: string. Here for the readers of any format (:func:`clear_index`,
#: :func:`read_index_pages`); the index itself is in
#: :mod:`scrapy_simhash.backends.redis_buckets`.
ENTRY_SIZE = 12
BUCKET_SKETCH_BLOCK = 255
ENTRY_DTYPE = np.dtype([("fp", ">u8"), ("key", ">u4")])


def import_redis() -> Any:
    """Import redis-py, or fail with the name of the extra that provides it."""
    try:
        import redis
    except ImportError as exc:
        raise ImportError(
            needs('the Redis backend (SIMHASH_BACKEND = "redis")', "redis-py", "redis")
        ) from exc
    return redis


try:
    from hiredis import pack_command as _hiredis_pack
except ImportError:  # the pure-Python parser: redis-py packs
    _hiredis_pack = None


def _pack(connection: Any, command: tuple[Any, ...]) -> list[bytes]:
    """``command`` as the chunks a connection sends: packed by hiredis directly
    when it is there (a fifth of the client's time in a call, skipping
    redis-py's argument checks: the arguments are bytes, str and int)."""
    if _hiredis_pack is not None:
        return [_hiredis_pack(command)]
    return connection.pack_command(*command)


def script_source(name: str) -> str:
    """The Lua script ``data/<name>`` shipped with the package."""
    return resources.files("scrapy_simhash").joinpath(f"data/{name}").read_text(encoding="utf-8")


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
    """Other writers kept storing pages near this one between its probe and its insert."""


class IndexPermissionError(RuntimeError):
    """The Redis user may not run a command the index needs."""

    def __init__(self, command: str, error: str) -> None:
        super().__init__(f"{command}: {error}")
        self.command = command
        self.error = error


def index_info(client: Any, prefix: str) -> dict[str, Any] | None:
    """The stored metadata of the index under ``prefix`` (None when there is none):
    k, layout, fingerprint_version, format, size, signature, epoch, ..."""
    raw = client.hgetall(f"{prefix}:meta")
    if not raw:
        return None
    info: dict[str, Any] = {}
    for name, value in raw.items():
        name, text = name.decode(), value.decode()
        try:
            info[name] = text if name in ("signature", "epoch") else json.loads(text)
        except ValueError:
            info[name] = text
    return info


def _format_of(info: dict[str, Any]) -> int:
    try:
        return int(info.get("format", 0))
    except (TypeError, ValueError):
        return 0


def clear_index(client: Any, prefix: str, *, extra: list[str] | tuple[str, ...] = ()) -> int:
    """Delete the index under ``prefix`` (of any format: its log or tables per its
    stored metadata, sketches, URLs, metadata, and ``extra`` keys); return the
    number of keys deleted."""
    keys = {f"{prefix}:meta", f"{prefix}:urls", f"{prefix}:sketches", f"{prefix}:buckets",
            *extra}  # fmt: skip
    info = index_info(client, prefix) or {}
    size = int(info.get("size", 0) or 0)
    if _format_of(info) >= 4:
        names = [f"{prefix}:log:{n}" for n in range(size // LOG_BLOCK + 1)]
        names += [f"{prefix}:sketches:{n}" for n in range(size // SKETCH_BLOCK + 1)]
    else:  # format 3: sketches in blocks; 1 and 2: a hash per table
        names = [f"{prefix}:sketches:{n}" for n in range(size // BUCKET_SKETCH_BLOCK + 1)]
        try:
            tables = len(TableLayout.from_dict(info["layout"]).tables)
        except (KeyError, ValueError, TypeError):
            tables = 0
        names += [f"{prefix}:t{i}" for i in range(tables)]
    deleted = 0
    for start in range(0, len(names), 1000):
        deleted += unlink(client, names[start : start + 1000])
    return deleted + unlink(client, sorted(keys))


def unlink(client: Any, names: list[str]) -> int:
    """Delete ``names`` with UNLINK: Redis frees a large value (a log block, a
    million URLs) in the background, where DEL would block every client for as
    long; DEL for a user not allowed UNLINK."""
    if not names:
        return 0
    try:
        return int(client.unlink(*names))
    except import_redis().exceptions.NoPermissionError:
        return int(client.delete(*names))


def _read_string(client: Any, name: str, length: int) -> bytes:
    """The first ``length`` bytes of the string ``name``, in GETRANGEs of at most
    :data:`READ_CHUNK` bytes (no command grows with the index)."""
    parts = []
    for start in range(0, length, READ_CHUNK):
        part = client.getrange(name, start, min(length, start + READ_CHUNK) - 1)
        parts.append(part)
        if len(part) < min(READ_CHUNK, length - start):
            break  # shorter than the metadata says
    return b"".join(parts)


def _read_hash(client: Any, name: str) -> dict[bytes, bytes]:
    """Every field of the hash ``name``, by HSCANs of about 250 fields (an HGETALL
    of a million URLs would hold every other client of the node while it runs)."""
    return dict(client.hscan_iter(name, count=250))


class RedisIndexBase:
    """What every placement of the shared index has in common: the metadata (its
    identity, signature and epoch), the URLs, the node holding the index, and
    the checks of a page and of a vanished index.

    Keys are handed out by Redis (1, 2, 3, ... in insertion order); the index
    keeps a URL per key. Subclasses store the fingerprints and answer
    :meth:`query_and_add`.
    """

    #: Where the tables live (part of the identity).
    PLACEMENT = "one_slot"
    #: The Redis layout this class reads and writes (part of the identity).
    FORMAT = FORMAT_VERSION
    #: The insert script (``data/<name>``).
    SCRIPT = "redis_log_insert.lua"

    def __init__(
        self,
        client: Any,
        prefix: str,
        layout: Any,
        *,
        expected_size: int = 1 << 20,
        fingerprint_version: int = FINGERPRINT_VERSION,
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
        self.signature = ""
        self.epoch = ""  # set by open(): which creation of the index was joined
        self._script = client.register_script(script_source(self.SCRIPT))
        #: What probes met (``redis/`` stats).
        self.counts: Counter[str] = Counter()
        redis = import_redis()
        self._errors = (redis.RedisError, OSError)
        self._no_script = redis.exceptions.NoScriptError
        #: The connection the insert script runs on: (node client, connection, pid).
        self._held: tuple[Any, Any, int] | None = None

    # -- metadata ----------------------------------------------------------

    def _identity(self) -> dict[str, Any]:
        """What every process sharing the index must agree on."""
        return {
            "k": self.k,
            "layout": self.layout.to_dict(),
            "fingerprint_version": self.fingerprint_version,
            "urls": self.url_format,
            "tables": self.PLACEMENT,
            "format": self.FORMAT,
        }

    def _extra_fields(self) -> dict[str, str]:
        """Metadata fields beyond the identity that this placement needs."""
        return {}

    def _signed(self) -> Any:
        """What the signature covers besides the identity."""
        return None

    def _adopt(self, stored: dict[str, str]) -> None:
        """Take what the process that created the index chose."""

    def _joined(self, size: int) -> int:
        """After the metadata is checked: ready the probes; the index's size."""
        return size

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
        fields.update(self._extra_fields())
        fields["size"] = "0"
        fields["signature"] = self._signature(identity, self._signed())
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
        self._adopt(stored)
        self.signature = stored["signature"]
        self.epoch = stored["epoch"]
        self.check_permissions()
        return self._joined(int(stored.get("size", 0)))

    @staticmethod
    def _signature(identity: dict[str, Any], extra: Any) -> str:
        text = json.dumps([identity, extra], sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    def _check(self, identity: dict[str, Any], stored: dict[str, str]) -> None:
        theirs = _format_of({"format": stored.get("format", "0")})
        # another placement is named below (tables=), not taken for an older index
        same_placement = stored.get("tables", '"one_slot"') == json.dumps(identity["tables"])
        if same_placement and 0 < theirs < self.FORMAT:
            raise IndexMismatchError(
                f"The shared simhash index {self.prefix!r} has the Redis layout of an older "
                f"scrapy-simhash (format {theirs}; this version reads format "
                f"{self.FORMAT}): clear it with SIMHASH_RESET=True (or scrapy-simhash "
                "redis-clear) and crawl again, or use another SIMHASH_REDIS_KEY"
            )
        missing = sorted({*identity, *self._extra_fields(), "signature", "size", "epoch"}
                         - set(stored))  # fmt: skip
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
        """Delete every key of this index (its fingerprints, sketches, URLs and metadata)."""
        return clear_index(self.client, self.prefix)

    def __len__(self) -> int:
        return int(self.client.hget(self.meta_key, "size") or 0)

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

    def _check_reply(self, status: int, value: Any) -> None:
        """Raise for the insert scripts' replies that say the index is not the one joined."""
        if status == -1:
            self._check_alive(None, None)
        if status == -2:
            signature, _, epoch = value.decode().partition("/")
            self._check_alive(signature.encode(), epoch.encode())

    # -- the node, scripts and permissions ------------------------------------

    def slot_keys(self) -> list[str]:
        """The keys one script call touches, which a cluster needs in one slot."""
        raise NotImplementedError

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

    def _execute(self, pipe: Any) -> list[Any]:
        """Run ``pipe``, telling a cluster client to look again when it failed."""
        try:
            return pipe.execute()
        except self._errors:
            self._node_failed()
            raise

    def load_script(self) -> None:
        """Load the insert script (into every master of a cluster)."""
        self.client.script_load(self._script.script)

    def run_script(self, keys: list[Any], args: list[Any]) -> Any:
        """Run the insert script on the node holding the index (loading it when
        the node lost it), on a connection this index holds between calls.

        A page costs one script call, and redis-py's command path (pool, retry
        and observability hooks) took more client CPU than the round trip itself
        (``bench/bench_redis.py``); the connection is the pool's, with its
        timeouts, and is given back and dropped on any error but a script's
        own error reply.
        """
        node = self._node()
        held = self._held
        if held is None or held[0] is not node or held[2] != os.getpid():
            self.release_connection()
            held = self._held = (node, node.connection_pool.get_connection(), os.getpid())
        connection = held[1]
        try:
            stale = connection.can_read()  # stray data: a reply never read
        except self._errors:
            stale = True  # closed by the server meanwhile
        if stale:
            connection.disconnect()  # the command below connects again, as the pool would
        command = ("EVALSHA", self._script.sha, len(keys), *keys, *args)
        try:
            try:
                connection.send_packed_command(_pack(connection, command))
                return connection.read_response()
            except self._no_script:  # a restarted or flushed node: load it, once
                connection.send_command("SCRIPT", "LOAD", self._script.script)
                connection.read_response()
                connection.send_packed_command(_pack(connection, command))
                return connection.read_response()
        except import_redis().exceptions.ResponseError:
            raise  # a whole reply was read: the connection is fine
        except BaseException:
            self.release_connection(broken=True)
            raise

    def release_connection(self, *, broken: bool = False) -> None:
        """Give the script's connection back to its pool (closed when ``broken``:
        a reply may be half read); not in a forked child, whose parent owns it."""
        held, self._held = self._held, None
        if held is None or held[2] != os.getpid():
            return
        node, connection, _ = held
        if broken:
            connection.disconnect()
        node.connection_pool.release(connection)

    def check_permissions(self) -> None:
        """Run every command a crawl needs once, on this index's keys, changing
        nothing a reader sees; raise :class:`IndexPermissionError` naming the
        first one Redis refuses (an ACL user allowed EVAL but not EVALSHA would
        otherwise pass start-up and then leave every page unchecked)."""
        raise NotImplementedError

    @staticmethod
    def _refused(command: str, error: str) -> None:
        """Raise for a command a script could not run: a permission error when
        the Redis user may not, else the error itself."""
        if "user executing the script" in error or "NOPERM" in error:
            raise IndexPermissionError(command.upper(), error)
        raise import_redis().exceptions.ResponseError(f"{command.upper()}: {error}")

    # -- URLs ----------------------------------------------------------------

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

    def url(self, key: int) -> str | None:
        """The URL stored with ``key`` (its token in the compact format), or None."""
        key = int(key)
        if self.url_format == "hash":
            block = self.client.hget(self.urls_key, str(key // URL_BLOCK))
            raw = (block or b"")[(key % URL_BLOCK) * 8 : (key % URL_BLOCK) * 8 + 8]
            return self.decode_url(raw) or None
        value = self.client.hget(self.urls_key, str(key))
        return None if value is None else value.decode("utf-8", "replace")

    def _stored_url(self, url: str) -> Any:
        """What the insert script stores of ``url``."""
        if self.url_format == "hash" and url:
            return xxhash.xxh3_64_digest(url.encode("utf-8", "surrogatepass"))
        return url or ""

    def _url_block_arg(self) -> int:
        """The insert scripts' URL format argument."""
        return URL_BLOCK if self.url_format == "hash" else 0

    def _add_urls(self, keys: np.ndarray, urls: list[str], batch: int) -> None:
        """Store ``urls`` under ``keys`` (consecutive) in this index's URL format."""
        if self.url_format == "hash":
            self._add_url_hashes(int(keys[0]), urls)
            return
        pipe = self.client.pipeline(transaction=False)
        for start in range(0, len(keys), batch):
            chunk = dict(zip(map(str, keys[start : start + batch].tolist()),
                             urls[start : start + batch]))  # fmt: skip
            pipe.hset(self.urls_key, mapping=chunk)
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

    # -- probes ----------------------------------------------------------------

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

    def query_and_add(
        self, fp: int, url: str = "", *, add: str = "if_new", sketch: bytes = b""
    ) -> tuple[list[Match], str | None, int]:
        """Probe; insert ``fp`` (with ``url`` and ``sketch``) per ``add``,
        atomically: (confirmed matches, URL of the nearest, new key or 0)."""
        raise NotImplementedError

    def query(self, fp: int) -> list[Match]:
        """Every stored fingerprint within k bits, sorted by (distance, key)."""
        return self.query_and_add(fp, add="never")[0]

    def _bulk(self, fps: np.ndarray, urls: list[str] | None,
              sketches: list[bytes] | None) -> np.ndarray:
        """``add_many``'s fingerprints as ``uint64``, once its arguments agree."""
        if not self.epoch:
            raise RuntimeError("call open() before add_many()")
        fps = np.ascontiguousarray(fps, dtype=np.uint64)
        for name, values in (("URLs", urls), ("sketches", sketches)):
            if values is not None and len(values) != len(fps):
                raise ValueError(f"{len(fps)} fingerprints but {len(values)} {name}")
        return fps

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


class RedisSimhashIndex(RedisIndexBase):
    """The shared index as a log in Redis, its tables in this process.

    Matches are those of the in-process tables
    (:class:`~scrapy_simhash.index.SimhashIndex`) over every page of the log this
    process has read, which an insert or a query brings up to date: every stored
    fingerprint within k bits, at most :data:`CANDIDATE_CAP` of them.
    """

    PLACEMENT = "one_slot"
    FORMAT = FORMAT_VERSION
    SCRIPT = "redis_log_insert.lua"

    def __init__(self, client: Any, prefix: str, layout: Any, **kwargs: Any) -> None:
        super().__init__(client, prefix, layout, **kwargs)
        #: Log and sketch blocks are the strings ``<log_key><n>``, ``<sketches_key><n>``.
        self.log_key = f"{prefix}:log:"
        self.sketches_key = f"{prefix}:sketches:"
        self._reset_tables()

    def _reset_tables(self) -> None:
        """Empty this process's tables (a new index, or one created again)."""
        self.local = SimhashIndex(k=self.k, layout=self.layout, expected_size=self.expected_size)
        #: The fingerprint of key ``q`` at ``[q - 1]``: the log as far as read.
        self._fps = np.empty(1024, dtype=np.uint64)
        #: Log entries read (the keys 1 .. synced are in the tables).
        self.synced = 0

    def _joined(self, size: int) -> int:
        self._reset_tables()
        self.sync()
        return max(size, self.synced)

    def log_block(self, block: int) -> str:
        """The key of log block ``block`` (keys ``block * LOG_BLOCK + 1`` on)."""
        return f"{self.log_key}{block}"

    def sketch_block(self, block: int) -> str:
        """The key of sketch block ``block`` (keys ``block * SKETCH_BLOCK + 1`` on)."""
        return f"{self.sketches_key}{block}"

    def slot_keys(self) -> list[str]:
        return [self.meta_key, self.urls_key, self.log_block(0), self.sketch_block(0)]

    # -- the log ---------------------------------------------------------------

    def _take(self, raw: bytes) -> None:
        """Add the log entries ``raw`` (those after :attr:`synced`) to the tables."""
        if not raw:
            return
        fps = np.frombuffer(raw, dtype=">u8").astype(np.uint64)
        n = len(fps)
        if self.synced + n > len(self._fps):
            grown = np.empty(max(2 * len(self._fps), self.synced + n), dtype=np.uint64)
            grown[: self.synced] = self._fps[: self.synced]
            self._fps = grown
        self._fps[self.synced : self.synced + n] = fps
        self.local.add_many(fps, np.arange(self.synced + 1, self.synced + n + 1, dtype=np.uint64))
        self.synced += n

    def _rewound(self, size: int) -> None:
        """The log holds fewer pages than this process has read, under the same
        epoch: a failover to a replica that had not received the last writes.
        The tables are read again from the log that is there."""
        logger.warning(
            "The simhash log of %(prefix)s holds %(size)d pages, this process had read "
            "%(synced)d (a failover to a replica that lagged?): reading it again",
            {"prefix": self.prefix, "size": size, "synced": self.synced},
        )
        self.counts["log_rewound_count"] += 1
        self._reset_tables()

    def sync(self) -> int:
        """Read the log past what this process holds, in GETRANGEs of at most
        :data:`SYNC_CHUNK` entries; return the log's size."""
        try:
            return self._sync()
        except self._errors:
            self._node_failed()
            raise

    def _sync(self) -> int:
        signature, epoch, size = self._node().hmget(self.meta_key, ["signature", "epoch", "size"])
        self._check_alive(signature, epoch)
        size = int(size or 0)
        if size < self.synced:
            self._rewound(size)
        while self.synced < size:
            block, at = divmod(self.synced, LOG_BLOCK)
            upto = min(size, self.synced + SYNC_CHUNK, (block + 1) * LOG_BLOCK)
            want = (upto - self.synced) * 8
            raw = self._node().getrange(self.log_block(block), at * 8,
                                        (upto - block * LOG_BLOCK) * 8 - 1)  # fmt: skip
            self._take(raw[: len(raw) // 8 * 8])
            if len(raw) < want:  # shorter than the size said: cleared meanwhile?
                self._check_alive(*self._node().hmget(self.meta_key, ["signature", "epoch"]))
                logger.warning("The simhash log of %(prefix)s holds fewer pages than its "
                               "metadata says (%(size)d)", {"prefix": self.prefix, "size": size})
                break
        return size

    # -- probe and insert ------------------------------------------------------

    def query_and_add(
        self, fp: int, url: str = "", *, add: str = "if_new", sketch: bytes = b""
    ) -> tuple[list[Match], str | None, int]:
        """Probe this process's tables; insert ``fp`` (with ``url`` and
        ``sketch``) per ``add``, atomically.

        The candidates within k, at most :data:`CANDIDATE_CAP` of them (nearest
        first), are confirmed by their stored sketches with
        :func:`~scrapy_simhash.fingerprinting.signature.confirms_many` (one
        round trip; a stored page without a sketch is never confirmed; without a
        ``sketch`` every candidate counts); then the insert script appends only
        if no page this process has not read yet is within k, else the process
        takes those pages and probes again. With ``add="never"`` the log is read
        first (the script, reading only). Returns the confirmed matches sorted
        by (distance, key), the URL of the nearest (with ``url_format="hash"``,
        its :meth:`url_token`), and the new key (0 when nothing was inserted).
        Raises :class:`IndexFullError`, carrying the matches, when Redis
        refused the insertion for lack of memory; :class:`IndexMissingError`
        when the index vanished; :class:`IndexConflictError` when pages within
        k kept arriving.
        """
        fp = self._checked(fp, add, sketch)
        fp8 = fp.to_bytes(8, "big")
        if add == "never":
            self._call("never", fp8, "", b"")
        for _ in range(MAX_ATTEMPTS):
            candidates, same = self._candidates(fp)
            matches = self._confirmed(candidates, sketch)
            nearest = self.url(matches[0].key) if matches else None
            if not (add == "always" or (add == "if_new" and not matches)):
                return matches, nearest, 0
            if same >= SAME_FINGERPRINT_CAP:
                self.counts["crowded_count"] += 1
                return matches, nearest, 0
            status, value = self._call(add, fp8, url, sketch)
            if status == 0:
                return matches, nearest, value
            if status == -3:
                raise IndexFullError.refused(self.prefix, matches, nearest)
            self.counts["conflict_count"] += 1  # -4: probe again with the pages read
        raise IndexConflictError(
            f"pages within {self.k} bits of a page were stored in {self.prefix!r} "
            f"{MAX_ATTEMPTS} times between its probe and its insert"
        )

    def _call(self, add: str, fp8: bytes, url: str, sketch: bytes) -> tuple[int, int]:
        """Run the insert script (``"never"``: read the tail only), taking the
        pages it returns; (status, new key): 0 appended (or read), -3 Redis is
        full, -4 a page within k was among those read."""
        mode = _SCRIPT_MODES[add]
        for _ in range(2):
            keys = [self.meta_key, self.urls_key, self.log_key, self.sketches_key]
            args = [self.signature, self.epoch, self.synced, fp8, self.k, sketch,
                    self._stored_url(url), self._url_block_arg(), mode, LOG_BLOCK, TAIL_CAP,
                    SKETCH_BLOCK, SKETCH_BINS]  # fmt: skip
            try:
                status, value, tail = self.run_script(keys, args)
            except self._errors:
                self._node_failed()
                raise
            self._check_reply(status, value)
            if status not in (-7, -8):
                break
            self.sync()  # too far behind for the script (or ahead): read the log
        else:
            status, value, tail = -4, 0, b""  # still behind: probe again
        if status == 0 and mode != "read":
            self._take(tail + fp8)  # then this page: its key is the last one read
            return 0, int(value)
        self._take(tail)
        return int(status), 0

    def _candidates(self, fp: int) -> tuple[list[Match], int]:
        """The stored fingerprints within k in this process's tables, nearest
        first (then oldest): at most :data:`CANDIDATE_CAP`; and how many stored
        pages have exactly ``fp``."""
        keys, dists, same = self.local.query_keys(fp, CANDIDATE_CAP + 1)
        if not len(keys):
            return [], same
        if len(keys) > CANDIDATE_CAP:
            self.counts["unexamined_count"] += 1  # at least one: query_keys stops there
        order = np.lexsort((keys, dists))[:CANDIDATE_CAP]
        keys, dists = keys[order], dists[order]
        fps = self._fps[(keys - np.uint64(1)).astype(np.intp)]
        return [Match(key, stored, distance) for key, stored, distance
                in zip(keys.tolist(), fps.tolist(), dists.tolist())], same  # fmt: skip

    def _confirmed(self, candidates: list[Match], sketch: bytes) -> list[Match]:
        """The candidates whose stored sketch confirms ``sketch``
        (:func:`~scrapy_simhash.fingerprinting.signature.confirms_many`; every
        candidate without a ``sketch``), in the same order; checks in the same
        round trip that the index is still the one joined."""
        if not candidates:
            return candidates
        pipe = self.pipeline()
        pipe.hmget(self.meta_key, ["signature", "epoch"])
        spans = self._spans([m.key - 1 for m in candidates]) if sketch else []
        for block, low, high, _ in spans:
            pipe.getrange(self.sketch_block(block), low * SKETCH_BINS, (high + 1) * SKETCH_BINS - 1)
        meta, *ranges = self._execute(pipe)
        self._check_alive(*meta)
        if not sketch:
            return candidates
        stored = [b""] * len(candidates)
        for (_, low, _, rows), data in zip(spans, ranges):
            for row, slot in rows:
                stored[row] = data[(slot - low) * SKETCH_BINS : (slot - low + 1) * SKETCH_BINS]
        # a page stored without a sketch (zeros, or nothing) is never confirmed
        have = [i for i, other in enumerate(stored)
                if len(other) == SKETCH_BINS and other != _NO_SKETCH]  # fmt: skip
        if not have:
            return []
        others = np.frombuffer(b"".join(stored[i] for i in have), dtype=np.uint8)
        others = others.reshape(len(have), SKETCH_BINS)
        verdicts = confirms_many(np.frombuffer(sketch, dtype=np.uint8), others)
        return [candidates[i] for i, ok in zip(have, verdicts.tolist()) if ok]

    @staticmethod
    def _spans(positions: list[int]) -> list[tuple[int, int, int, list[tuple[int, int]]]]:
        """The sketch ranges to read for log ``positions``: (block, first slot, last
        slot, [(row, slot), ...]), slots at most :data:`SPAN_GAP` apart sharing one
        GETRANGE (pages stored together, such as those of one crowded fingerprint)."""
        spans: list[tuple[int, int, int, list[tuple[int, int]]]] = []
        for row in sorted(range(len(positions)), key=positions.__getitem__):
            block, slot = divmod(positions[row], SKETCH_BLOCK)
            if spans and spans[-1][0] == block and slot - spans[-1][2] <= SPAN_GAP:
                spans[-1][3].append((row, slot))
                spans[-1] = (block, spans[-1][1], slot, spans[-1][3])
            else:
                spans.append((block, slot, slot, [(row, slot)]))
        return spans

    # -- start-up ----------------------------------------------------------------

    def check_permissions(self) -> None:
        redis = import_redis()
        command = "SCRIPT LOAD"
        try:
            self._node().script_load(self._script.script)
            command = "HMGET"
            self._node().hmget(self.meta_key, ["signature", "epoch", "size"])
            command = "GETRANGE"
            self._node().getrange(self.log_block(0), 0, 7)
            command = "HGET"
            self.url(1)
            command = "EVALSHA"
            keys = [self.meta_key, self.urls_key, self.log_key, self.sketches_key]
            args = [self.signature, self.epoch, 0, bytes(8), self.k, b"", "",
                    self._url_block_arg(), "check", LOG_BLOCK, TAIL_CAP, SKETCH_BLOCK,
                    SKETCH_BINS]  # fmt: skip
            reply = self._node().evalsha(self._script.sha, len(keys), *keys, *args)
        except redis.exceptions.NoPermissionError as exc:
            raise IndexPermissionError(command, str(exc)) from exc
        self._check_reply(int(reply[0]), reply[1])
        if reply[0] == -6:
            self._refused(reply[1].decode(), reply[2].decode())

    # -- bulk load ---------------------------------------------------------------

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
        against concurrent writers: load before the crawl starts. Returns the keys.
        """
        fps = self._bulk(fps, urls, sketches)
        n = len(fps)
        if n == 0:
            return np.empty(0, dtype=np.uint64)
        size = self.sync()
        keys = np.arange(size + 1, size + n + 1, dtype=np.uint64)
        data = fps.astype(">u8").tobytes()
        pipe = self.pipeline()
        self._write_blocks(pipe, self.log_block, LOG_BLOCK, size, data, 8)
        if sketches is not None:
            blob = b"".join(s if len(s) == SKETCH_BINS else _NO_SKETCH for s in sketches)
            self._write_blocks(pipe, self.sketch_block, SKETCH_BLOCK, size, blob, SKETCH_BINS)
        self._execute(pipe)
        if urls is not None:
            self._add_urls(keys, urls, batch)
        self.client.hset(self.meta_key, "size", size + n)  # last: readers see whole entries
        self._take(data)
        return keys

    def _write_blocks(self, pipe: Any, name: Any, per_block: int, first: int, data: bytes,
                      width: int) -> None:  # fmt: skip
        """Queue SETRANGEs writing ``data`` (entries of ``width`` bytes from log
        position ``first`` on) into the blocks ``name(n)`` of ``per_block``
        entries, at most 1 MiB a command (Redis holds a command whole)."""
        pos, end = first, first + len(data) // width
        step = max(1, (1 << 20) // width)
        while pos < end:
            block = pos // per_block
            upto = min(end, (block + 1) * per_block, pos + step)
            pipe.setrange(name(block), (pos - block * per_block) * width,
                          data[(pos - first) * width : (upto - first) * width])  # fmt: skip
            pos = upto


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


class StoredPages(NamedTuple):
    """Every page of a Redis index, for the command line: as a crawl stored them."""

    k: int  #: the index's k (the crawl's ``SIMHASH_MAX_DISTANCE``)
    fingerprints: np.ndarray  #: ``uint64``, by key order
    sketches: np.ndarray  #: ``(n, SKETCH_BINS)`` ``uint8``
    urls: list[str]  #: URLs, or ``xxh3:<hex>`` with ``SIMHASH_REDIS_URLS = "hash"``


def read_index_pages(client: Any, prefix: str) -> StoredPages | None:
    """Read every page of the index under ``prefix`` (None when there is none):
    the log (format 4) or the first table (the sharded placement, format 3)
    holds each page once; sketches and URLs by key."""
    info = index_info(client, prefix)
    if info is None:
        return None
    version = info.get("fingerprint_version")
    if version != FINGERPRINT_VERSION:
        raise IndexMismatchError(
            f"The index {prefix!r} holds fingerprints of version {version}, this "
            f"scrapy-simhash computes version {FINGERPRINT_VERSION}: they cannot be compared"
        )
    if _format_of(info) >= 4:
        size = int(info.get("size", 0) or 0)
        log = b"".join(_read_string(client, f"{prefix}:log:{n}",
                                    (min(size, (n + 1) * LOG_BLOCK) - n * LOG_BLOCK) * 8)
                       for n in range(size // LOG_BLOCK + 1))  # fmt: skip
        fingerprints = np.frombuffer(log[: size * 8], dtype=">u8").astype(np.uint64)
        keys = np.arange(1, len(fingerprints) + 1, dtype=np.uint64)
        sketch_block, first_key = SKETCH_BLOCK, 1
    else:
        fingerprints, keys = _first_table(client, prefix, info)
        sketch_block, first_key = BUCKET_SKETCH_BLOCK, 0
    sketches = np.zeros((len(keys), SKETCH_BINS), dtype=np.uint8)
    blocks: dict[int, bytes] = {}
    for row, key in enumerate(keys.tolist()):
        block, slot = divmod(key - first_key, sketch_block)
        if block not in blocks:
            blocks[block] = _read_string(client, f"{prefix}:sketches:{block}",
                                         sketch_block * SKETCH_BINS)  # fmt: skip
        value = blocks[block][slot * SKETCH_BINS : (slot + 1) * SKETCH_BINS]
        if len(value) == SKETCH_BINS:
            sketches[row] = np.frombuffer(value, dtype=np.uint8)
    raw_urls = _read_hash(client, f"{prefix}:urls")
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


def _first_table(client: Any, prefix: str, info: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Format 3: the fingerprints and keys of the first table (each page once;
    its fields start with table number 0, one byte, two beyond 256 tables)."""
    if info.get("tables", "one_slot") == "sharded":
        base = prefix.replace("{", "").replace("}", "")
        fields = _read_hash(client, f"{{{base}:t0}}:table")
    else:
        fields = _read_hash(client, f"{prefix}:buckets")
    try:
        width = 1 if len(TableLayout.from_dict(info["layout"]).tables) <= 256 else 2
    except (KeyError, ValueError, TypeError):
        width = 1
    blobs = [value for field, value in fields.items() if not any(field[:width])]
    entries = np.frombuffer(b"".join(blobs), dtype=ENTRY_DTYPE)
    entries = entries[np.argsort(entries["key"], kind="stable")]
    return entries["fp"].astype(np.uint64), entries["key"].astype(np.uint64)
