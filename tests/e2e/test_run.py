"""`hstack run` (what `make run` calls) on a machine with nothing configured: embedded Redis, demo model."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import pytest
from dotenv import dotenv_values

from tests.support.env import free_port, reachable
from tests.support.processes import wait_for_turn, wait_until

pytestmark = pytest.mark.e2e

HSTACK = str(Path(sys.executable).with_name("hstack"))
CLEARED = ("REDIS_URL", "DATABASE_URL", "LLM_BASE_URL", "LLM_API_KEY", "LLM_MODEL", "ADMIN_API_KEY", "HSTACK_DOTENV")


def start(workdir: Path, port: int) -> tuple[subprocess.Popen, Path]:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(DATA_DIR=str(workdir / "data"), API_PORT=str(port), HSTACK_ENV="development", PYTHONUNBUFFERED="1")
    log = workdir / f"run-{len(list(workdir.glob('run-*.log')))}.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen([HSTACK, "run"], cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    return proc, log


def ready(proc: subprocess.Popen, log: Path, base: str) -> bool:
    """The supervisor said the stack is ready (it says so after /readyz answered 200)."""
    if proc.poll() is not None:
        raise RuntimeError(f"hstack run exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
    return f"Hermes Stack is ready at {base}" in log.read_text(errors="replace")


def stop(proc: subprocess.Popen) -> int:
    os.kill(proc.pid, signal.SIGTERM)
    return proc.wait(60)


def test_hstack_run_starts_everything_answers_a_turn_and_stops_cleanly():
    workdir = Path(tempfile.mkdtemp(prefix="hstack-run-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc, log = start(workdir, port)
    try:
        wait_until(lambda: ready(proc, log, base), timeout=120, interval=0.2, what="hstack run to be ready")
        output = log.read_text()
        admin_key = dotenv_values(workdir / ".env")["ADMIN_API_KEY"]
        assert admin_key and admin_key in output, "the admin key is generated into .env and printed"
        assert "demo model" in output.lower()

        admin = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {admin_key}"}, timeout=30)
        user = admin.post("/v1/users", json={"name": "first-run"}).raise_for_status().json()
        key = admin.post(f"/v1/users/{user['id']}/keys").raise_for_status().json()["key"]
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30) as c:
            sid = c.post("/v1/sessions", json={}).json()["id"]
            turn = c.post(f"/v1/sessions/{sid}/turns", json={"input": "hello there"}).json()
            done = wait_for_turn(c, turn["id"], timeout=60)
        assert done["status"] == "completed" and done["output"]
        assert stop(proc) == 0
        assert not reachable("127.0.0.1", port), "the api is gone after SIGTERM"

        proc, log = start(workdir, port)
        wait_until(lambda: ready(proc, log, base), timeout=120, interval=0.2, what="the second start")
        names = [u["name"] for u in admin.get("/v1/users").json()["data"]]
        assert "first-run" in names, "a second run reuses the data"
        assert stop(proc) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        print(log.read_text()[-4000:] if log.exists() else "")
