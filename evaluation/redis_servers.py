"""Real ``redis-server`` processes on free loopback ports, for tests and benchmarks.

:class:`RedisServer` is one server (persistence off, in a directory of its own)
that can be stopped, restarted, paused with SIGSTOP and resumed; extra
``redis-server`` arguments set e.g. ``maxmemory``. :class:`RedisClusterServers`
starts ``masters * (1 + replicas)`` of them with ``cluster-enabled yes`` and
joins them with ``redis-cli --cluster create``. No system service is used or
touched.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["REDIS_CLI", "REDIS_SERVER", "RedisClusterServers", "RedisServer", "free_port"]

REDIS_SERVER = shutil.which("redis-server")
REDIS_CLI = shutil.which("redis-cli")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cluster_free_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free too."""
    for _ in range(100):
        port = free_port()
        if port + 10000 < 65536:
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port + 10000))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free port pair for a cluster node")


class RedisServer:
    """One ``redis-server`` process bound to 127.0.0.1."""

    def __init__(
        self,
        directory: Path,
        port: int | None = None,
        args: tuple[str, ...] = (),
        choose_port: Callable[[], int] = free_port,
    ) -> None:
        self.directory = Path(directory)
        self._choose_port = choose_port if port is None else None
        self.port = port or choose_port()
        self.args = tuple(args)
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        if REDIS_SERVER is None:
            raise RuntimeError("redis-server is not installed")
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
            *self.args,
        ]  # fmt: skip
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = (self.directory / "redis.log").read_text(errors="replace")[-2000:]
                if self._choose_port is not None and "Address already in use" in log:
                    # the free port was taken meanwhile: take another, once
                    self.port, self._choose_port = self._choose_port(), None
                    return self.start(timeout)
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

    def pause(self) -> None:
        """SIGSTOP: the server keeps its port and connections but answers nothing."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after :meth:`pause`."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL, as a crashed machine: nothing is written or handed over."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
        self.process = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)  # a paused server cannot terminate
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


class RedisClusterServers:
    """A Redis Cluster of ``masters`` masters with ``replicas`` replicas each."""

    def __init__(
        self,
        directory: Path,
        masters: int = 3,
        replicas: int = 1,
        node_timeout_ms: int = 1000,
    ) -> None:
        self.directory = Path(directory)
        self.masters = masters
        self.replicas = replicas
        self.servers: list[RedisServer] = []
        for i in range(masters * (1 + replicas)):
            node_dir = self.directory / f"node{i}"
            node_dir.mkdir(parents=True, exist_ok=True)
            args = (
                "--cluster-enabled", "yes",
                "--cluster-config-file", str(node_dir / "nodes.conf"),
                "--cluster-node-timeout", str(node_timeout_ms),
                # a replica may take over even when it lost contact a while ago
                "--cluster-replica-validity-factor", "0",
                "--repl-diskless-sync-delay", "0",  # replicas in sync at once
            )  # fmt: skip
            self.servers.append(RedisServer(node_dir, args=args, choose_port=self._port))

    def _port(self) -> int:
        """A port free with its bus port, and not given to another node yet."""
        taken = {server.port for server in getattr(self, "servers", [])}
        while (port := cluster_free_port()) in taken:
            pass
        return port

    @property
    def url(self) -> str:
        """The URL of a live node (any node leads a cluster client to all)."""
        return next(s.url for s in self.servers if s.process is not None)

    def start(self, timeout: float = 30.0) -> None:
        if REDIS_CLI is None:
            raise RuntimeError("redis-cli is not installed")
        try:
            for server in self.servers:
                server.start()
        except BaseException:
            self.stop()
            raise
        nodes = [f"127.0.0.1:{s.port}" for s in self.servers]
        subprocess.run(
            [REDIS_CLI, "--cluster", "create", *nodes,
             "--cluster-replicas", str(self.replicas), "--cluster-yes"],
            check=True, capture_output=True, timeout=timeout,
        )  # fmt: skip
        self.wait_ok(timeout)
        self.wait_synced(timeout)

    @staticmethod
    def _fields(server: RedisServer, *command: str) -> dict[str, str]:
        """The ``name:value`` lines a ``redis-cli`` command prints, as a dict."""
        out = subprocess.run(
            [REDIS_CLI, "-p", str(server.port), *command],
            capture_output=True, text=True, timeout=5,
        ).stdout  # fmt: skip
        return dict(line.split(":", 1) for line in out.split() if ":" in line)

    def wait_synced(self, timeout: float = 30.0) -> None:
        """Until every replica has finished its first sync with its master."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            live = [s for s in self.servers if s.process is not None]
            infos = [self._fields(s, "info", "replication") for s in live]
            replicas = [i for i in infos if i.get("role") == "slave"]
            if len(replicas) >= self.masters * self.replicas and all(
                i.get("master_link_status") == "up" and i.get("master_sync_in_progress") == "0"
                for i in replicas
            ):
                return
            time.sleep(0.1)
        raise RuntimeError(f"the replicas in {self.directory} are not in sync after {timeout} s")

    def cluster_info(self, server: RedisServer) -> dict[str, str]:
        return self._fields(server, "cluster", "info")

    def wait_ok(self, timeout: float = 30.0) -> None:
        """Until every live node reports ``cluster_state:ok``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            live = [s for s in self.servers if s.process is not None]
            if all(self.cluster_info(s).get("cluster_state") == "ok" for s in live):
                return
            time.sleep(0.1)
        raise RuntimeError(f"the cluster in {self.directory} is not ok after {timeout} s")

    def server_on(self, port: int) -> RedisServer:
        return next(s for s in self.servers if s.port == port)

    def stop(self) -> None:
        for server in self.servers:
            server.stop()
