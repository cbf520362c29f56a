"""Drive a Docker Compose project of the stack as a person would: a fresh copy of the checkout, a `.env`
made from `.env.example`, `docker compose` commands, and HTTP through the published ports."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from tests.support.env import free_port
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
# Only what the docker client itself needs: the test process's own stack settings (GATEWAY_API_KEY, ...)
# would otherwise win over .env, since compose reads the shell before .env.
CLIENT_ENV = ("PATH", "HOME", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "TMPDIR")
KEY_LINE = re.compile(r"^\s+(hsk_\S+)\s*$", re.MULTILINE)
ID_WORDS = re.compile(r"with id (\S+)\.")


def client_env() -> dict[str, str]:
    """The environment `docker compose` runs with: the client's, none of the stack's settings."""
    return {name: os.environ[name] for name in CLIENT_ENV if name in os.environ}


def compose_missing() -> str | None:
    """Why `docker compose` cannot run containers here, or None when it can."""
    if not shutil.which("docker"):
        return "no docker client"
    for probe in (["docker", "compose", "version"], ["docker", "info"]):
        result = subprocess.run(probe, capture_output=True, text=True, env=client_env())
        if result.returncode != 0:
            return f"`{' '.join(probe)}` failed: {(result.stderr or result.stdout).strip()[:200]}"
    return None


def require_compose() -> None:
    """Skip without a usable docker compose; under CI=true that is a failure."""
    missing = compose_missing()
    if missing and os.environ.get("CI"):
        pytest.fail(f"CI=true and docker compose is unusable: {missing}")
    if missing:
        pytest.skip(missing)


def copy_checkout(dest: Path) -> Path:
    """The checkout's tracked and new files, as a person's clone would hold them."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def new_secret() -> str:
    return "hsk_" + secrets.token_urlsafe(32)


@dataclass
class Project:
    """One compose project of the stack in its own folder, on its own ports, removed by `remove()`."""

    root: Path
    profile: str | None = None
    name: str = field(default_factory=lambda: f"hstack-e2e-{uuid.uuid4().hex[:8]}")
    api_port: int = field(default_factory=free_port)
    gateway_port: int = field(default_factory=free_port)
    env: dict[str, str] = field(default_factory=dict)

    def write_env(self, **extra: str) -> None:
        """README: copy .env.example to .env and fill in the secrets (plus what the test shortens)."""
        self.env = {"ADMIN_API_KEY": new_secret(), "GATEWAY_API_KEY": new_secret(),
                    "REDIS_PASSWORD": secrets.token_urlsafe(24), "API_PORT": str(self.api_port),
                    "GATEWAY_PORT": str(self.gateway_port), **extra}
        lines = [f"{k}={v}" for k, v in self.env.items()]
        (self.root / ".env").write_text((self.root / ".env.example").read_text() + "\n" + "\n".join(lines) + "\n")

    def compose(self, *args: str, timeout: float = 600, check: bool = True,
                stdin: str | None = None) -> subprocess.CompletedProcess:
        """`docker compose -p NAME [--profile P] ARGS` in the project's folder."""
        profile = ["--profile", self.profile] if self.profile else []
        result = subprocess.run(["docker", "compose", "-p", self.name, *profile, *args], cwd=self.root,
                                env=client_env(), capture_output=True, text=True, timeout=timeout, input=stdin)
        if check and result.returncode != 0:
            raise AssertionError(f"docker compose {' '.join(args)} exited {result.returncode}:\n"
                                 f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        return result

    def exec(self, service: str, *command: str, stdin: str | None = None, check: bool = True) -> str:
        """Run a command in the service's (first) container; its standard output."""
        return self.compose("exec", "-T", service, *command, stdin=stdin, check=check, timeout=120).stdout

    def up(self, *args: str) -> float:
        """`docker compose up -d ARGS`, then the seconds until the api answers /readyz ready."""
        started = time.monotonic()
        self.compose("up", "-d", *args)
        self.wait_ready()
        return time.monotonic() - started

    def wait_ready(self, timeout: float = 240) -> None:
        def ready() -> bool:
            try:
                return httpx.get(f"{self.url}/readyz", timeout=5).json().get("status") == "ready"
            except (httpx.HTTPError, ValueError):
                return False

        wait_until(ready, timeout=timeout, interval=0.5, what=f"{self.url}/readyz to answer ready")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def client(self, key: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)

    def create_user(self, name: str) -> tuple[str, str]:
        """README: `docker compose exec api hstack users create NAME`; the id and the key it prints once."""
        out = self.exec("api", "hstack", "users", "create", name)
        key, user_id = KEY_LINE.search(out), ID_WORDS.search(out)
        assert key and user_id, f"no id and API key printed for {name}: {out}"
        return user_id.group(1), key.group(1)

    def states(self, service: str) -> list[tuple[str, str]]:
        """(state, health) of each container of a service."""
        rows = self.compose("ps", "-a", "--format", "json", service).stdout
        parsed = [json.loads(line) for line in rows.splitlines() if line.strip().startswith("{")]
        return [(row["State"], row.get("Health", "")) for row in parsed]

    def wait_healthy(self, service: str, count: int, timeout: float = 300) -> None:
        wait_until(lambda: self.states(service).count(("running", "healthy")) == count, timeout=timeout,
                   interval=1, what=f"{count} healthy {service} container(s)")

    @contextmanager
    def logs_on_failure(self) -> Iterator[None]:
        """Print the services' recent logs when the block fails, before the project is removed."""
        try:
            yield
        except BaseException:
            print(self.compose("logs", "--no-color", "--tail", "60", check=False, timeout=60).stdout)
            raise

    def remove(self) -> None:
        """`docker compose down -v`: containers, networks and volumes go."""
        self.compose("down", "-v", "--remove-orphans", "--timeout", "5", check=False, timeout=300)


def read_sse(client: httpx.Client, path: str) -> list[dict]:
    """Every SSE event of a stream until the server closes it, as {event, data}."""
    events, frame = [], {}
    with client.stream("GET", path, timeout=120) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if not line:
                if "event" in frame:
                    events.append({"event": frame["event"], "data": json.loads(frame.get("data") or "{}")})
                frame = {}
            elif not line.startswith(":"):
                key, _, value = line.partition(":")
                frame[key] = value.strip()
    return events
