"""`hstack run` (what `make run` calls) as a real process for end-to-end tests: its own DATA_DIR, `.env`, port,
and its own embedded Redis (REDIS_URL is never passed on, so the system Redis is never touched)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
from dotenv import dotenv_values

from tests.support.env import free_port
from tests.support.waiting import wait_until

HSTACK = str(Path(sys.executable).with_name("hstack"))
CLEARED = ("REDIS_URL", "DATABASE_URL", "LLM_BASE_URL", "LLM_API_KEY", "LLM_MODEL", "ADMIN_API_KEY", "HSTACK_DOTENV",
           "DATA_DIR", "API_PORT", "BROKER_KEY_PREFIX", "GATEWAY_API_KEY", "GATEWAY_PORT", "TELEGRAM_BOT_TOKEN")


class HstackRun:
    """One `hstack run` in a fresh working directory; `start()` again reuses its data."""

    def __init__(self, **env: str) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="hstack-run-"))
        self.port = free_port()
        self.gateway_port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.extra_env = env
        self.proc: subprocess.Popen | None = None
        self.log: Path | None = None

    def start(self) -> "HstackRun":
        env = {k: v for k, v in os.environ.items() if k not in CLEARED}
        env.update(DATA_DIR=str(self.workdir / "data"), API_PORT=str(self.port), GATEWAY_PORT=str(self.gateway_port),
                   HSTACK_ENV="development",
                   PYTHONUNBUFFERED="1", **self.extra_env)
        self.log = self.workdir / f"run-{len(list(self.workdir.glob('run-*.log')))}.log"
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen([HSTACK, "run"], cwd=self.workdir, env=env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log and self.log.exists() else ""

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def said(self, text: str) -> bool:
        """The console shows `text`; RuntimeError when `hstack run` has exited instead."""
        if not self.running():
            raise RuntimeError(f"hstack run exited with {self.proc.returncode}:\n{self.output()[-4000:]}")
        return text in self.output()

    def wait_ready(self, timeout: float = 120) -> None:
        wait_until(lambda: self.said(f"Hermes Stack is ready at {self.base}"), timeout=timeout, interval=0.2,
                   what="hstack run to be ready")

    def admin_key(self) -> str:
        return dotenv_values(self.workdir / ".env")["ADMIN_API_KEY"]

    def client(self, key: str | None = None) -> httpx.Client:
        return httpx.Client(base_url=self.base, headers={"Authorization": f"Bearer {key or self.admin_key()}"},
                            timeout=30)

    def create_user(self, name: str) -> str:
        """A new user's API key."""
        with self.client() as admin:
            user = admin.post("/v1/users", json={"name": name}).raise_for_status().json()
            return admin.post(f"/v1/users/{user['id']}/keys").raise_for_status().json()["key"]

    def children(self) -> dict[int, str]:
        """pid -> command line of every process the supervisor started."""
        found = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except (OSError, IndexError, ValueError):
                continue
            if ppid == self.proc.pid:
                found[int(entry.name)] = cmdline
        return found

    def child_pid(self, needle: str) -> int:
        """The pid of the supervisor's child whose command line contains `needle`."""
        pids = [pid for pid, cmdline in self.children().items() if needle in cmdline]
        if not pids:
            raise LookupError(f"no child of hstack run runs {needle!r}")
        return pids[0]

    def stop(self, timeout: float = 60) -> int:
        os.kill(self.proc.pid, signal.SIGTERM)
        return self.proc.wait(timeout)

    def __enter__(self) -> "HstackRun":
        return self.start()

    def __exit__(self, exc_type, *_exc) -> None:
        """Stop what is left; children live in their own sessions, so a stuck supervisor's are killed one by one."""
        if self.running():
            orphans = self.children()
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                for pid in orphans:
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
        if exc_type is not None:
            print(self.output()[-6000:])
            for log in sorted((self.workdir / "data" / "logs").glob("*.log")):
                print(f"----- {log.name} -----\n{log.read_text(errors='replace')[-3000:]}")
        elif not self.running():
            shutil.rmtree(self.workdir, ignore_errors=True)
