"""One crawl's tables spread over the masters of a Redis Cluster (``SIMHASH_REDIS_SHARDED``).

Off by default. Each permuted table lives in a hash slot of its own
(``{<prefix>:t<i>}:table``), so one crawl can outgrow one master; the metadata,
URLs and a lock stay in the prefix's slot. Redis refuses a script across slots,
so a probe-and-insert is no longer one atomic script: a writer takes a lease
lock (``SET NX PX``) in the metadata slot, reads the query's buckets (one
pipelined round trip per master), compares in numpy, inserts (the one-slot
script for the key and URL, then one pipelined append per master) and releases
the lock only if it still holds it.

What it guarantees: while leases hold, writers of one crawl take turns, so no
two near-duplicates are both kept and none is dropped twice. A writer stalled
past its lease (``lease`` seconds), or dead, lets the next one in: two
near-duplicate pages may then both be kept (counted: ``lease_lost``), and a
writer that died mid-insert leaves its page in some tables only (a later copy
may be kept). A distinct page is never dropped: a drop rests on a stored
fingerprint within k. Waiting for the lock is bounded by ``lock_wait``
(the backend passes ``SIMHASH_REDIS_TIMEOUT``): beyond it the call fails like an
outage and the page is queued. Cost: 3 + 2 x masters round trips for a new page,
and writers of one crawl are serialised (bench/results/redis.txt).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from scrapy_simhash.backends.redis import (
    FIXED_SCRIPT_ARGS,
    _APPEND_SCRIPT,
    _ENTRY_DTYPE,
    IndexFullError,
    IndexMismatchError,
    IndexMissingError,
    RedisSimhashIndex,
)
from scrapy_simhash.fingerprinting.signature import confirms
from scrapy_simhash.index import Match

__all__ = ["LockTimeout", "ShardedRedisSimhashIndex"]

# Deletes the lock only when it still holds this writer's token; 1 when it did.
_UNLOCK_SCRIPT = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class LockTimeout(TimeoutError):
    """Another writer held the crawl's lock for longer than the wait allowed."""


class ShardedRedisSimhashIndex(RedisSimhashIndex):
    """:class:`RedisSimhashIndex` with a hash slot per table and a lease lock."""

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

    def open(self, *, reset: bool = False) -> int:
        size = super().open(reset=reset)
        # the one-slot script: no tables
        self.keys = [self.meta_key, self.urls_key, self.sketches_key]
        return size

    def slot_keys(self) -> list[str]:
        return [self.meta_key, self.urls_key, self.sketches_key, self.lock_key]

    def clear(self) -> int:
        keys = [*self.table_keys, self.lock_key]
        return int(self.client.delete(*keys)) + super().clear()

    # -- probe and insert ----------------------------------------------------

    def query_and_add(
        self, fp: int, url: str = "", *, add: str = "if_new", sketch: bytes = b""
    ) -> tuple[list[Match], str | None, int]:
        """As :meth:`RedisSimhashIndex.query_and_add`, under the crawl's lock
        (candidates confirmed here by their stored sketches, the same rule)."""
        fp = self._checked(fp, add, sketch)
        token = os.urandom(8)
        self._lock(token)
        try:
            fields = self.bucket_fields(fp)
            matches = self._confirmed(self._matches(fp, self._read(fields)), sketch)
            nearest = self.url(matches[0].key) if matches else None
            new_key = 0
            if add == "always" or (add == "if_new" and not matches):
                # the one-slot script with no tables: signature, key, URL
                insert = self._script(
                    keys=self.keys, args=self.script_args(fp, url, "always", sketch)
                )
                try:
                    _, _, new_key = self._answer(insert)
                except IndexFullError as exc:
                    raise IndexFullError(str(exc), matches, nearest) from None
                entry = int(fp).to_bytes(8, "big") + int(new_key).to_bytes(4, "big")
                self._append(fields, entry)
        finally:
            if not self._unlock_script(keys=[self.lock_key], args=[token]):
                self.lease_lost += 1
        return matches, nearest, new_key

    def script_args(self, fp: int, url: str, add: str, sketch: bytes = b"") -> list[Any]:
        # no bucket fields: no tables
        return super().script_args(fp, url, add, sketch)[:FIXED_SCRIPT_ARGS]

    def _confirmed(self, matches: list[Match], sketch: bytes) -> list[Match]:
        """The candidates whose stored sketch confirms ``sketch`` (all without one)."""
        if not sketch or not matches:
            return matches
        stored = self.client.hmget(self.sketches_key, [str(m.key) for m in matches])
        return [m for m, other in zip(matches, stored) if other and len(other) == len(sketch) and confirms(other, sketch)]

    def run_batch(self, entries: list[tuple[int, str, str, bytes]]) -> list[Any]:
        results: list[Any] = []
        for fp, url, add, sketch in entries:
            try:
                results.append(self.query_and_add(fp, url, add=add, sketch=sketch))
            except (IndexFullError, IndexMismatchError, IndexMissingError) as exc:
                results.append(exc)
        return results

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
            # a node gone or a slot moved: the cluster client reads the slot map
            # again only on errors of its own calls
            manager = getattr(self.client, "nodes_manager", None)
            if manager is not None:
                manager.initialize()
            raise
        return replies

    def _read(self, fields: list[bytes]) -> list[bytes | None]:
        blobs: list[bytes | None] = [None] * len(self.table_keys)
        for pipe, tables in self._node_pipelines():
            for t in tables:
                pipe.hget(self.table_keys[t], fields[t])
            for t, blob in zip(tables, self._execute(pipe)):
                blobs[t] = blob
        return blobs

    def _append(self, fields: list[bytes], entry: bytes) -> None:
        for pipe, tables in self._node_pipelines():
            for t in tables:
                pipe.eval(_APPEND_SCRIPT, 1, self.table_keys[t], fields[t], entry)
            self._execute(pipe)

    def _matches(self, fp: int, blobs: list[bytes | None]) -> list[Match]:
        """Every stored fingerprint within k in the buckets read, once each."""
        data = b"".join(blob for blob in blobs if blob)
        if not data:
            return []
        rows = np.frombuffer(data, dtype=_ENTRY_DTYPE)
        fps = rows["fp"].astype(np.uint64)
        distances = np.bitwise_count(fps ^ np.uint64(fp))
        near = distances <= self.k
        keys, first = np.unique(rows["key"][near], return_index=True)
        found = [
            Match(int(key), int(fps[near][i]), int(distances[near][i]))
            for key, i in zip(keys.tolist(), first.tolist())
        ]
        found.sort(key=lambda m: (m.distance, m.key))
        return found
