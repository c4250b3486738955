"""One crawl's tables spread over the masters of a Redis Cluster (``SIMHASH_REDIS_SHARDED``).

Off by default. Each permuted table lives in a hash slot of its own
(``{<prefix>:t<i>}:table``), so one crawl can outgrow one master; the metadata,
URLs and a lock stay in the prefix's slot. Redis refuses a script across slots,
so a probe-and-insert is no longer one atomic script: a writer takes a lease
lock (``SET NX PX``) in the metadata slot, checks the metadata, reads the
query's buckets (one pipelined round trip per master), compares in numpy,
confirms the candidates by their sketches (``confirms_many``), inserts (the
one-slot insert script for the key, URL and sketch, then one pipelined append
per master, skipping full buckets) and releases the lock only if it still
holds it. The caps of :mod:`scrapy_simhash.backends.redis` apply.

What it guarantees: while leases hold, writers of one crawl take turns, so no
two near-duplicates are both kept and none is dropped twice. A writer stalled
past its lease (``lease`` seconds), or dead, lets the next one in: two
near-duplicate pages may then both be kept (counted: ``lease_lost``), and a
writer that died mid-insert leaves its page in some tables only (a later copy
may be kept). A distinct page is never dropped: a drop rests on a stored
fingerprint within k. Waiting for the lock is bounded by ``lock_wait``
(the backend passes ``SIMHASH_REDIS_TIMEOUT``): beyond it the call fails like an
outage and the page is queued. Cost: 4 + 2 x masters round trips for a new page,
and writers of one crawl are serialised (bench/results/redis.txt).
"""

from __future__ import annotations

import os
import time
from typing import Any

from scrapy_simhash.backends.redis_buckets import BUCKET_CAP, BucketRedisSimhashIndex
from scrapy_simhash.backends.redis_index import ENTRY_SIZE, IndexFullError, unlink
from scrapy_simhash.index import Match

__all__ = ["LockTimeout", "ShardedRedisSimhashIndex"]

# Appends an entry to each bucket that has room (ARGV: capacity in bytes,
# then field, entry pairs); returns how many were full.
_APPEND_CAPPED_SCRIPT = """
local full = 0
for i = 2, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[1], ARGV[i]) or ''
  if #old + #ARGV[i + 1] > tonumber(ARGV[1]) then
    full = full + 1
  else
    redis.call('HSET', KEYS[1], ARGV[i], old .. ARGV[i + 1])
  end
end
return full
"""

# Deletes the lock only when it still holds this writer's token; 1 when it did.
_UNLOCK_SCRIPT = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class LockTimeout(TimeoutError):
    """Another writer held the crawl's lock for longer than the wait allowed."""


class ShardedRedisSimhashIndex(BucketRedisSimhashIndex):
    """:class:`~scrapy_simhash.backends.redis_buckets.BucketRedisSimhashIndex`
    with a hash slot per table and a lease lock."""

    PLACEMENT = "sharded"

    def __init__(
        self, client: Any, prefix: str, layout: Any, *, lease: float = 2.0,
        lock_wait: float = 0.5, **kwargs: Any,
    ) -> None:  # fmt: skip
        super().__init__(client, prefix, layout, **kwargs)
        base = prefix.replace("{", "").replace("}", "")
        self.table_keys = [f"{{{base}:t{i}}}:table" for i in range(len(self._tables))]
        self.lock_key = f"{prefix}:lock"
        self.lease = lease
        self.lock_wait = lock_wait
        self.lease_lost = 0
        self._unlock_script = client.register_script(_UNLOCK_SCRIPT)

    def slot_keys(self) -> list[str]:
        return [self.meta_key, self.urls_key, self.sketches_key, self.lock_key]

    def _field(self, table: int, bucket: bytes) -> bytes:
        return bucket  # a key per table

    def _table_key(self, table: int) -> str:
        return self.table_keys[table]

    def _script_tables(self) -> list[str]:
        return []  # in slots of their own: appended by _append

    def clear(self) -> int:
        keys = [*self.table_keys, self.lock_key]
        return unlink(self.client, keys) + super().clear()

    # -- probe and insert ----------------------------------------------------

    def query_and_add(
        self, fp: int, url: str = "", *, add: str = "if_new", sketch: bytes = b""
    ) -> tuple[list[Match], str | None, int]:
        """As :meth:`BucketRedisSimhashIndex.query_and_add`, under the crawl's lock
        (the insert script then only hands out the key and stores the URL and
        the sketch; the entries are appended table by table)."""
        fp = self._checked(fp, add, sketch)
        token = os.urandom(8)
        self._lock(token)
        try:
            fields = self.bucket_fields(fp)
            blobs = self._read(fields)
            matches = self._confirmed(self._candidates(fp, blobs), sketch)
            nearest = self.url(matches[0].key) if matches else None
            new_key = 0
            if add == "always" or (add == "if_new" and not matches):
                if self._crowded(fp, blobs):
                    self.counts["crowded_count"] += 1
                    return matches, nearest, 0
                status, new_key, _ = self._insert(fp, url, sketch, [], [])
                if status == -3:
                    raise IndexFullError.refused(self.prefix, matches, nearest)
                entry = int(fp).to_bytes(8, "big") + int(new_key).to_bytes(4, "big")
                self.counts["bucket_full_count"] += self._append(fields, entry)
        finally:
            if not self._unlock_script(keys=[self.lock_key], args=[token]):
                self.lease_lost += 1
        return matches, nearest, int(new_key)

    # -- the lock ------------------------------------------------------------

    def _lock(self, token: bytes) -> None:
        deadline = time.monotonic() + self.lock_wait
        lease_ms = max(1, int(self.lease * 1000))
        pause = 0.0002
        while not self.client.set(self.lock_key, token, nx=True, px=lease_ms):
            if time.monotonic() > deadline:
                raise LockTimeout(
                    f"another writer has held the lock of {self.prefix!r} for more than "
                    f"{self.lock_wait:g} s (a dead writer's lease ends after {self.lease:g} s)"
                )
            time.sleep(pause)
            pause = min(pause * 2, 0.005)

    # -- tables on several nodes ---------------------------------------------

    def _node_pipelines(self) -> list[tuple[Any, list[int]]]:
        """(pipeline, table numbers) for each node holding tables."""
        node_of = getattr(self.client, "get_node_from_key", None)
        if node_of is None:
            return [(self.client.pipeline(transaction=False), list(range(len(self.table_keys))))]
        groups: dict[str, tuple[Any, list[int]]] = {}
        for t, key in enumerate(self.table_keys):
            node = node_of(key)
            if node.name not in groups:
                pipe = self.client.get_redis_connection(node).pipeline(transaction=False)
                groups[node.name] = (pipe, [])
            groups[node.name][1].append(t)
        return list(groups.values())

    def _execute(self, pipe: Any) -> list[Any]:
        try:
            replies = pipe.execute(raise_on_error=True)
        except self._errors:
            self._node_failed()  # a node gone or a slot moved
            raise
        return replies

    def _read(self, fields: list[bytes]) -> list[bytes | None]:
        """The query's bucket in every table (a pipelined round trip per master),
        after checking the metadata (one more)."""
        self._check_alive(*self.client.hmget(self.meta_key, ["signature", "epoch"]))
        blobs: list[bytes | None] = [None] * len(self.table_keys)
        for pipe, tables in self._node_pipelines():
            for t in tables:
                pipe.hget(self.table_keys[t], fields[t])
            for t, blob in zip(tables, self._execute(pipe)):
                blobs[t] = blob
        return blobs

    def _append(self, fields: list[bytes], entry: bytes) -> int:
        """Append ``entry`` to its bucket in every table with room; return how
        many buckets were full."""
        full = 0
        for pipe, tables in self._node_pipelines():
            for t in tables:
                pipe.eval(_APPEND_CAPPED_SCRIPT, 1, self.table_keys[t],
                          BUCKET_CAP * ENTRY_SIZE, fields[t], entry)
            full += sum(int(n) for n in self._execute(pipe))
        return full
