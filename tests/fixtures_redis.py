"""Redis test fixtures: real ``redis-server``s of our own on free loopback ports
(:mod:`evaluation.redis_servers` starts them).

A server runs in a temporary directory with persistence off and is stopped
after use. Tests that need it are skipped with a clear reason when the
``redis-server`` binary is absent (``make test`` installs Debian's package).
No system service is used or touched.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluation.redis_servers import REDIS_CLI, REDIS_SERVER, RedisServer, free_port

__all__ = [
    "RedisServer", "redis_client", "redis_cluster", "redis_cluster_to_break", "redis_server",
    "redis_server_factory", "redis_url", "fill_up", "make_room",
]

NO_REDIS_REASON = "redis-server is not installed (make test installs Debian's redis-server)"
_free_port = free_port


def fill_up(client) -> tuple[int, int]:
    """Write until Redis refuses (noeviction), then hold it well over its limit: freed
    allocator pages would otherwise let a write or two through now and then.
    Returns what :func:`make_room` needs to undo it."""
    import redis

    filler = 0
    try:
        while True:
            client.set(f"filler:{filler}", b"x" * 4096)
            filler += 1
    except redis.exceptions.OutOfMemoryError:
        pass
    limit = client.config_get("maxmemory")["maxmemory"]
    used = client.info("memory")["used_memory"]
    client.config_set("maxmemory", max(1, used - 256 * 1024))
    return filler, limit


def make_room(client, filled: tuple[int, int]) -> None:
    """Undo :func:`fill_up`: the old limit back, the filler deleted."""
    filler, limit = filled
    client.config_set("maxmemory", limit)
    client.delete(*(f"filler:{i}" for i in range(filler)))


@pytest.fixture
def redis_server_factory() -> Iterator:
    """Start extra servers (each stopped at the end of the test), e.g. to stop one
    mid-crawl; arguments are extra ``redis-server`` options."""
    servers: list[RedisServer] = []
    if REDIS_SERVER is None:
        pytest.skip(NO_REDIS_REASON)
    with tempfile.TemporaryDirectory(prefix="simhash-redis-") as tmp:

        def make(*args: str) -> RedisServer:
            directory = Path(tmp) / str(len(servers))
            directory.mkdir()
            server = RedisServer(directory, args=args)
            servers.append(server)
            server.start()
            return server

        try:
            yield make
        finally:
            for server in servers:
                server.stop()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One server for the whole session; ``redis_url`` empties it before each test."""
    if REDIS_SERVER is None:
        pytest.skip(NO_REDIS_REASON)
    with tempfile.TemporaryDirectory(prefix="simhash-redis-") as tmp:
        server = RedisServer(Path(tmp))
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """URL of the session server, flushed (and restarted if a test stopped it)."""
    if not redis_server.ping():
        redis_server.start()
    import redis

    client = redis.Redis.from_url(redis_server.url)
    try:
        client.flushall()
    finally:
        client.close()
    return redis_server.url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        yield client
    finally:
        client.close()


def _cluster(tmp: str) -> Iterator:
    from evaluation.redis_servers import RedisClusterServers

    if REDIS_SERVER is None or REDIS_CLI is None:
        pytest.skip(NO_REDIS_REASON)
    cluster = RedisClusterServers(Path(tmp), masters=3, replicas=1)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator:
    """A 3-master, 3-replica Redis Cluster on loopback for the session (left whole)."""
    with tempfile.TemporaryDirectory(prefix="simhash-cluster-") as tmp:
        yield from _cluster(tmp)


@pytest.fixture
def redis_cluster_to_break() -> Iterator:
    """A cluster of its own for a test that kills nodes."""
    with tempfile.TemporaryDirectory(prefix="simhash-cluster-") as tmp:
        yield from _cluster(tmp)
