"""Redis test fixtures: a real ``redis-server`` of our own on a free loopback port.

The server runs in a temporary directory with persistence off and is stopped
after use. Tests that need it are skipped with a clear reason when the
``redis-server`` binary is absent (``make test`` installs Debian's package).
No system service is used or touched.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["RedisServer", "redis_server", "redis_url", "redis_client", "redis_server_factory"]

REDIS_SERVER = shutil.which("redis-server")
NO_REDIS_REASON = "redis-server is not installed (make test installs Debian's redis-server)"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """One ``redis-server`` process bound to 127.0.0.1; ``stop()``/``start()`` for outages."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.directory = directory
        self.port = port or _free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        if REDIS_SERVER is None:
            pytest.skip(NO_REDIS_REASON)
        args = [
            REDIS_SERVER,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.directory),
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--protected-mode", "yes",
            "--loglevel", "warning",
            "--logfile", str(self.directory / "redis.log"),
        ]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = (self.directory / "redis.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"redis-server on port {self.port} exited: {log}")
            if self.ping():
                return
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"redis-server on port {self.port} did not answer in {timeout} s")

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


@pytest.fixture
def redis_server_factory() -> Iterator:
    """Start extra servers (each stopped at the end of the test), e.g. to stop one mid-crawl."""
    servers: list[RedisServer] = []
    with tempfile.TemporaryDirectory(prefix="simhash-redis-") as tmp:

        def make() -> RedisServer:
            directory = Path(tmp) / str(len(servers))
            directory.mkdir()
            server = RedisServer(directory)
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
