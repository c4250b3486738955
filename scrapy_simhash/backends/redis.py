"""The ``SIMHASH_BACKEND = "redis"`` backend: a crawl's pages checked against a
shared index in Redis (:mod:`scrapy_simhash.backends.redis_index`, or
:mod:`scrapy_simhash.backends.redis_sharded` for one crawl's tables spread over a
cluster), for crawls spread over several processes or machines.

What a sick Redis can cost (:class:`RedisBackend`): no call blocks Scrapy's
thread longer than ``SIMHASH_REDIS_TIMEOUT`` to connect plus as long for the
answer; after a failure Redis is left alone for a hold-off (1 s, doubling to
5 s), so a hung server costs at most one timeout per hold-off. Pages kept
unchecked meanwhile, and pages a full Redis (``maxmemory``, ``noeviction``)
checked but could not store, are queued (``SIMHASH_REDIS_QUEUE``) and indexed
when it answers again; a page whose insert timed out after Redis ran it is found
under its own URL then and not stored twice. What is lost: near-duplicates
among the pages of an outage are all kept (counted when they are indexed); pages
beyond the queue, or still queued when the crawl ends with Redis down, are never
indexed (counted, ERROR at close); in a cluster failover, writes the dead master
had not replicated yet (Redis replication is asynchronous), or the whole index
if its replica had not finished its first sync (then counted as lost).
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter, deque
from typing import Any

from scrapy_simhash.backends import BackendConfig, BackendError, Duplicate
from scrapy_simhash.backends.redis_buckets import BUCKET_CAP
from scrapy_simhash.backends.redis_index import (
    CANDIDATE_CAP,
    ENTRY_SIZE,
    FORMAT_VERSION,
    SAME_FINGERPRINT_CAP,
    URL_FORMATS,
    IndexConflictError,
    IndexFullError,
    IndexMismatchError,
    IndexMissingError,
    IndexPermissionError,
    RedisIndexBase,
    RedisSimhashIndex,
    StoredPages,
    clear_index,
    import_redis,
    index_info,
    read_index_pages,
)
from scrapy_simhash.backends.redis_sharded import ShardedRedisSimhashIndex
from scrapy_simhash.fingerprinting.signature import Signature
from scrapy_simhash.index import Match, TableLayout

__all__ = [
    "BUCKET_CAP", "CANDIDATE_CAP", "DEFAULT_QUEUE_SIZE", "DEFAULT_TIMEOUT", "ENTRY_SIZE",
    "FORMAT_VERSION", "SAME_FINGERPRINT_CAP", "URL_FORMATS", "IndexConflictError",
    "IndexFullError", "IndexMismatchError", "IndexMissingError", "IndexPermissionError",
    "RedisBackend", "RedisSimhashIndex", "StoredPages", "clear_index", "connect",
    "connection_params", "import_redis", "index_info", "read_index_pages",
]

logger = logging.getLogger(__name__)

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
        self.index: RedisIndexBase | None = None
        self.counts: Counter[str] = Counter()
        self._size = 0
        self._pending: deque[tuple[int, str, str, bytes]] = deque()
        self._retry_at = 0.0  # no call before this time (monotonic), after a failure
        self._flush_after = 0.0  # no queued page retried before this time
        self._holdoff = 0.0
        self._failing_since: float | None = None
        self._full_since: float | None = None
        self._overflow_warned = False
        self._lost: str | None = None  # the last index loss seen
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
            kind: type[RedisIndexBase] = RedisSimhashIndex
            if self.sharded:
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
        except IndexPermissionError as exc:
            raise BackendError(
                f"Redis user {self._user()!r} at {self.where} may not run {exc.command} "
                f"on {prefix}:*, which the simhash backend needs ({exc.error}); "
                "grant it in the user's ACL"
            ) from exc
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
            "%(tables)d tables (%(placement)s)",
            {
                "prefix": prefix,
                "where": self.where,
                "size": self._size,
                "tables": len(index.layout.tables),
                "placement": "in this process" if index.PLACEMENT == "one_slot"
                else "in Redis, one hash slot each",
            },
        )
        return self._size

    def _check_one_slot(self, index: RedisIndexBase) -> None:
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
        except IndexConflictError as exc:  # Redis answers: no hold-off
            self._enqueue(fingerprint, url, add, sketch)
            raise BackendError(f"Redis at {self.where}: {exc}; the page was queued") from exc
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

    def _user(self) -> str:
        """The Redis user this process authenticates as, for messages."""
        try:
            return str(self.client.acl_whoami().decode())
        except (*self._redis_errors, AttributeError):
            kwargs = getattr(getattr(self.client, "connection_pool", None), "connection_kwargs", {})
            return kwargs.get("username") or "default"

    def _probe(
        self, index: RedisIndexBase, fp: int, url: str, add: str, sketch: bytes
    ) -> tuple[list[Match], str | None, int]:
        try:
            try:
                return index.query_and_add(fp, url, add=add, sketch=sketch)
            except IndexMissingError as exc:
                self._index_lost(index, exc)
                return index.query_and_add(fp, url, add=add, sketch=sketch)
        except IndexFullError as exc:
            # checked against what is stored; stored later, when Redis has room
            self._became_full(exc)
            if add == "always" or not exc.matches:
                self.counts["unstored_count"] += 1
                self._enqueue(fp, url, add, sketch)
            return exc.matches, exc.nearest_url, 0

    def _index_lost(self, index: RedisIndexBase, exc: IndexMissingError) -> None:
        """The index vanished under the crawl: count it, say it, join (or create)
        it again; what was stored before is gone for every crawl sharing it, and
        the queued pages are indexed into the new one."""
        self.counts["index_lost_count"] += 1
        self._lost = str(exc)
        logger.error(
            "%(error)s: the pages indexed before are gone for every crawl sharing it; "
            "%(what)s at %(where)s (simhash/redis/index_lost_count)",
            {
                "error": exc,
                "what": "joining the new one" if exc.recreated else "starting it again empty",
                "where": self.where,
            },
        )
        index.open()
        self._flush_after = 0.0  # the queue goes into the new index

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

    def _flush(self, index: RedisIndexBase, limit: int | None) -> None:
        """Probe and insert up to ``limit`` queued pages (all with None), oldest
        first, one pipelined round trip a batch; those Redis refused stay queued."""
        while self._pending and time.monotonic() >= self._flush_after:
            batch = [self._pending[i] for i in range(min(len(self._pending), limit or 512))]
            results = index.run_batch(batch)
            kept: list[tuple[int, str, str, bytes]] = []
            for entry, result in zip(batch, results):  # shorter when Redis failed
                self._pending.popleft()
                if not self._reindexed(index, entry, result):
                    kept.append(entry)
            self._pending.extendleft(reversed(kept))
            if kept or limit is not None:
                return

    def _reindexed(
        self, index: RedisIndexBase, entry: tuple[int, str, str, bytes], result: Any
    ) -> bool:
        """Count one queued page's answer; False when it must stay queued."""
        if isinstance(result, IndexMissingError):
            # gone while the page waited: it goes into the index created again
            self._index_lost(index, result)
            result = index.run_batch([entry])[0]
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
        if index is not None:
            self.counts.update(index.counts)
            index.counts.clear()
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
            if self._lost is not None:
                logger.error(
                    "The shared simhash index at %(where)s vanished during the crawl "
                    "(%(count)d times; last: %(error)s): the pages indexed before each loss "
                    "are gone for every crawl sharing it (simhash/redis/index_lost_count)",
                    {
                        "where": self.where,
                        "count": self.counts["index_lost_count"],
                        "error": self._lost,
                    },
                )
            if index is not None:
                index.release_connection()
            self.client.close()

    def stats(self) -> dict[str, int]:
        """Counters of the queue of pages Redis could not take at once: the
        ``simhash/redis/`` stats."""
        counts = {**self.counts, "queue_length": len(self._pending)}
        if self.index is not None:
            for name, value in self.index.counts.items():
                counts[name] = counts.get(name, 0) + value
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
