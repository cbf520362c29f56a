"""Run the real service processes (api, workers, curator) for end-to-end tests and benchmarks."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.support.env import free_port, migrated_database, reachable, start_embedded_redis
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]

E2E_REDIS_DB = int(os.environ.get("HSTACK_E2E_REDIS_DB", "14"))


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log_path: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive():
            os.killpg(self.popen.pid, sig)

    def stop(self, timeout: float = 10) -> int | None:
        self.signal(signal.SIGTERM)
        return self.wait_stopped(timeout)

    def wait_stopped(self, timeout: float = 10) -> int | None:
        """Wait for an exit already asked for; SIGKILL after `timeout`."""
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            return self.popen.wait(5)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@dataclass
class Stack:
    """A private deployment: its own database, Redis db (or server) and DATA_DIR."""

    model_url: str
    env_overrides: dict[str, str] = field(default_factory=dict)
    own_redis: bool = False
    procs: list[Proc] = field(default_factory=list)
    code: Path = ROOT  # the checkout whose services run (bench.paired runs another revision beside this one)

    def __post_init__(self) -> None:
        self.data_dir = Path(tempfile.mkdtemp(prefix="hstack-e2e-"))
        self._cleanups: list = [lambda: shutil.rmtree(self.data_dir, ignore_errors=True)]
        self.database_url = self._make_database()
        self.redis_url = self._make_redis()
        self.api_port = free_port()
        self.base_url = f"http://127.0.0.1:{self.api_port}"
        self.admin_key = "e2e-admin-key-0123456789abcdef"
        self.env = {
            **os.environ,
            "HSTACK_ENV": "test",
            "HSTACK_DOTENV": str(self.data_dir / "absent.env"),
            "DATA_DIR": str(self.data_dir),
            "DATABASE_URL": self.database_url,
            "REDIS_URL": self.redis_url,
            "BROKER_KEY_PREFIX": f"e2e-{uuid.uuid4().hex[:8]}:",
            "API_PORT": str(self.api_port),
            "ADMIN_API_KEY": self.admin_key,
            "LLM_BASE_URL": self.model_url,
            "LLM_API_KEY": "sk-e2e-fake",
            "LLM_MODEL": "scripted",
            "LOG_FORMAT": "text",
            "PYTHONUNBUFFERED": "1",
            **self.env_overrides,
        }

    def _make_database(self) -> str:
        url, drop = migrated_database(self.data_dir)
        if drop:
            self._cleanups.append(drop)
        return url

    def _make_redis(self) -> str:

        if self.own_redis or not reachable("127.0.0.1", 6379):
            self.redis_port = free_port()
            url, proc = self.start_redis()
            return url
        return f"redis://127.0.0.1:6379/{E2E_REDIS_DB}"

    def start_redis(self) -> tuple[str, subprocess.Popen]:
        """Start (or restart) this stack's own redis-server on its fixed port, keeping nothing on disk."""
        url, proc = start_embedded_redis(self.data_dir, port=self.redis_port)
        self._redis_proc = proc
        self._cleanups.append(lambda: proc.poll() is None and proc.kill())
        return url, proc

    def kill_redis(self) -> None:
        self._redis_proc.kill()
        self._redis_proc.wait(10)

    def spawn(self, name: str, args: list[str], **extra_env: str) -> Proc:
        log_path = self.data_dir / f"{name}.log"
        out = open(log_path, "ab")
        popen = subprocess.Popen(
            [sys.executable, *args],
            env={**self.env, **extra_env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=str(self.code),
        )
        out.close()
        proc = Proc(name, popen, log_path)
        self.procs.append(proc)
        return proc

    def start_api(self) -> Proc:
        proc = self.spawn("api", ["-m", "uvicorn", "--factory", "services.api.main:create_app",
                                  "--host", "127.0.0.1", "--port", str(self.api_port), "--log-level", "warning",
                                  "--no-proxy-headers"])
        wait_until(lambda: self._ready(proc), timeout=30, what="the api to be ready")
        return proc

    def _ready(self, proc: Proc) -> bool:
        if not proc.alive():
            raise RuntimeError(f"api exited:\n{proc.log()[-3000:]}")
        try:
            return httpx.get(f"{self.base_url}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def start_worker(self, name: str = "worker", queue: str = "turns", concurrency: int = 50, **env: str) -> Proc:
        proc = self.spawn(name, ["-m", "celery", "-A", "services.worker.tasks", "worker", "-Q", queue,
                                 "--pool", "threads", "--concurrency", str(concurrency), "-n", f"{name}@%h",
                                 "--without-gossip", "--without-mingle", "--loglevel", "INFO"],
                          HSTACK_SERVICE=name, **env)
        wait_until(lambda: self._announced(proc, name), timeout=30, what=f"{name} to announce itself")
        return proc

    def start_curator(self) -> Proc:
        proc = self.spawn("curator", ["-m", "celery", "-A", "services.curator.tasks", "worker", "-B", "-Q", "curator",
                                      "--pool", "threads", "--concurrency", "2", "-n", "curator@%h",
                                      "--without-gossip", "--without-mingle", "--loglevel", "INFO",
                                      "--schedule", str(self.data_dir / "celerybeat-schedule")],
                          HSTACK_SERVICE="curator")
        wait_until(lambda: self._announced(proc, "curator"), timeout=30, what="the curator to announce itself")
        return proc

    def _announced(self, proc: Proc, service: str) -> bool:
        import redis

        from shared.ops.heartbeats import alive

        if not proc.alive():
            raise RuntimeError(f"{proc.name} exited:\n{proc.log()[-3000:]}")
        try:
            r = redis.Redis.from_url(self.redis_url, decode_responses=True)
            return any(s["service"] == service and s["pid"] == proc.popen.pid for s in alive(r))
        except redis.RedisError:
            return False

    # -- a client's view --------------------------------------------------------------------------

    def client(self, key: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key or self.admin_key}"}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=30)

    def create_user(self, name: str) -> str:
        """Create a user through the admin API; returns its API key."""
        with self.client() as admin:
            user = admin.post("/v1/users", json={"name": name}).raise_for_status().json()
            return admin.post(f"/v1/users/{user['id']}/keys").raise_for_status().json()["key"]

    def logs(self) -> str:
        return "\n".join(f"----- {p.name} -----\n{p.log()[-4000:]}" for p in self.procs)

    def __enter__(self) -> "Stack":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        """Stop everything; on a failure, print the services' logs first so the test report shows them."""
        if exc_type is not None:
            print(self.logs())
        self.stop()

    def stop(self) -> None:
        """SIGTERM every process at once, then wait for each: their graceful shutdowns overlap."""
        for proc in reversed(self.procs):
            proc.signal(signal.SIGTERM)
        for proc in reversed(self.procs):
            proc.wait_stopped()
        for fn in reversed(self._cleanups):
            try:
                fn()
            except Exception:
                pass


def wait_for_turn(client: httpx.Client, turn_id: str, *, timeout: float = 30, statuses=("completed", "failed", "cancelled")) -> dict:
    """Poll a turn until it reaches one of `statuses`."""
    def done():
        turn = client.get(f"/v1/turns/{turn_id}").json()
        return turn if turn["status"] in statuses else None

    return wait_until(done, timeout=timeout, interval=0.05, what=f"turn {turn_id} to finish")
