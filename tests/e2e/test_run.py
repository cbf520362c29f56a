"""`hstack run` (what `make run` calls) on a machine with nothing configured: embedded Redis, demo model."""

from __future__ import annotations

import re

import pytest

from tests.support.env import reachable
from tests.support.hstack_run import HstackRun
from tests.support.processes import wait_for_turn

pytestmark = pytest.mark.e2e

SERVICES = ("redis", "model", "api", "worker", "reviewer", "curator", "gateway")
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
    warning, and the "ready at" block buried in the middle (issue 9). Now: one line per service as it becomes
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
    assert sorted(ready) == sorted(SERVICES), output
    block = output.index("Hermes Stack is ready at")
    assert all(m.start() < block for m in READY_LINE.finditer(output)), "the ready block comes after every service"
    assert output.rstrip().endswith("Press Ctrl-C to stop."), "the ready block is the last thing printed"
    assert "celery@" not in output and "[config]" not in output and "-------------- " not in output
    assert "superuser" not in output.lower()
    assert len(output[:block].splitlines()) <= 12, output[:block]

    assert "[queues]" in worker_log, "the banner is kept in the worker's log"
    assert logged >= set(SERVICES)
