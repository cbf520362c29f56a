"""`hstack run` (what `make run` calls) on a machine with nothing configured: embedded Redis, demo model."""

from __future__ import annotations

import os
import re
import signal
from contextlib import suppress
from pathlib import Path

import pytest

from services.cli.stack import cores
from tests.support.env import reachable
from tests.support.hstack_run import HstackRun
from tests.support.processes import wait_for_turn
from tests.support.waiting import wait_until

# `hstack run` keeps its own SQLite database whatever TEST_DATABASE says, so the Postgres pass would repeat it.
pytestmark = [pytest.mark.e2e, pytest.mark.sqlite_only, pytest.mark.once]

SERVICES = ("redis", "model", "api", "worker", "reviewer", "curator", "gateway")
# One turns-worker process per core by default (services/cli/stack.py worker_layout): worker, worker2, …
WORKERS = tuple(f"worker{n}" for n in range(2, cores() + 1))
READY_LINE = re.compile(r"^  (\w+)\s+ready\s", re.MULTILINE)


def test_hstack_run_starts_everything_answers_a_turn_and_stops_cleanly():
    run = HstackRun()
    with run:
        run.wait_ready()
        output = run.output()
        admin_key = run.admin_key()
        assert admin_key and admin_key in output, "the admin key is generated into .env and printed"
        assert "demo model" in output.lower()

        key = run.create_user("first-run")
        with run.client(key) as c:
            sid = c.post("/v1/sessions", json={}).json()["id"]
            turn = c.post(f"/v1/sessions/{sid}/turns", json={"input": "hello there"}).json()
            done = wait_for_turn(c, turn["id"], timeout=60)
        assert done["status"] == "completed" and done["output"]
        assert run.stop() == 0
        assert not reachable("127.0.0.1", run.port), "the api is gone after SIGTERM"

        run.start()
        run.wait_ready()
        with run.client() as admin:
            names = [u["name"] for u in admin.get("/v1/users").json()["data"]]
        assert "first-run" in names, "a second run reuses the data"
        assert run.stop() == 0


def test_the_console_shows_one_line_per_service_then_the_ready_block_and_no_banner():
    """`make run` printed ~180 lines before it was usable: each Celery service's ASCII banner, a root-privileges
    warning, and the "ready at" block buried in the middle. Now: one line per service as it becomes
    ready, the ready block last; the banners stay in DATA_DIR/logs/<service>.log (`hstack logs SERVICE`)."""
    run = HstackRun()
    with run:
        run.wait_ready()
        output = run.output()
        assert run.stop() == 0
        logs = run.workdir / "data" / "logs"
        worker_log = (logs / "worker.log").read_text()
        logged = {p.stem for p in logs.glob("*.log")}

    ready = READY_LINE.findall(output)
    assert sorted(ready) == sorted(SERVICES + WORKERS), output
    block = output.index("Hermes Stack is ready at")
    assert all(m.start() < block for m in READY_LINE.finditer(output)), "the ready block comes after every service"
    assert output.rstrip().endswith("Press Ctrl-C to stop."), "the ready block is the last thing printed"
    assert "celery@" not in output and "[config]" not in output and "-------------- " not in output
    assert "superuser" not in output.lower()
    assert len(output[:block].splitlines()) <= 12 + len(WORKERS), output[:block]

    assert "[queues]" in worker_log, "the banner is kept in the worker's log"
    assert logged >= set(SERVICES)


def test_no_service_outlives_a_supervisor_killed_with_sigkill():
    """Children run in their own sessions, so when `hstack run` itself was killed with kill -9 (an OOM kill, a
    closed terminal's force-quit) the api, workers and Redis kept running without a supervisor, holding the port
    (noticed while hardening). Every child now gets SIGTERM when its supervisor dies, and the undertaker (a child
    too, which ignores signals and acts only when the supervisor's pipe ends) SIGKILLs what is left after a grace;
    it leaves last, so its exit shows the pipe ended."""
    run = HstackRun()
    with run:
        run.wait_ready()
        children = run.children()
        assert len(children) >= len(SERVICES)
        assert any("services.cli.undertaker" in cmdline for cmdline in children.values())
        born = {pid: _start_time(pid) for pid in children}
        run.proc.kill()
        run.proc.wait(10)

        def left() -> dict[int, str]:
            return {pid: cmd for pid, cmd in children.items() if _same_process_running(pid, born[pid])}

        try:
            wait_until(lambda: not left(), timeout=60, interval=0.2,
                       what="every child of the killed supervisor to stop")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; still running: {left()}") from None
        finally:
            for pid in left():  # never leave a failed run's services behind
                with suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
        assert not reachable("127.0.0.1", run.port)


def _stat(pid: int) -> list[str]:
    """/proc/<pid>/stat's fields after the command name: [0] the state, [19] the start time in clock ticks."""
    try:
        return (Path(f"/proc/{pid}") / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _start_time(pid: int) -> str | None:
    fields = _stat(pid)
    return fields[19] if len(fields) > 19 else None


def _same_process_running(pid: int, born: str | None) -> bool:
    """Still that very process and not a zombie. The test suite's other processes start threads by the thousand
    and pids wrap at 32,768 here, so within a minute a pid can name a newcomer (a false "still running" once
    seen in a full run): the start time tells them apart."""
    fields = _stat(pid)
    return len(fields) > 19 and fields[19] == born and fields[0] != "Z"
