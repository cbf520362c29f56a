"""`hstack run` heals itself: kill -9 of the worker mid-turn and of the embedded Redis, and the stack comes back."""

from __future__ import annotations

import signal
import os
import sqlite3

import pytest

from shared.ops import holders
from tests.fakes.model import FakeModel, text
from tests.support.hstack_run import HstackRun
from tests.support.processes import wait_for_turn
from tests.support.waiting import wait_until

# `hstack run` keeps its own SQLite database whatever TEST_DATABASE says, so the Postgres pass would repeat it.
pytestmark = [pytest.mark.e2e, pytest.mark.sqlite_only, pytest.mark.once]

MARKER = "slow question"
IN_FLIGHT_SECONDS = 120  # the first answer is still being "thought" when the worker dies


def holder_pid(run: HstackRun, turn_id: str) -> int:
    """The pid of the worker process whose lease the turn is under (`hstack run` starts one per core)."""
    with sqlite3.connect(run.workdir / "data" / "hstack.db") as db:
        (worker_id,) = db.execute("SELECT worker_id FROM turns WHERE id = ?", (turn_id,)).fetchone()
    return holders.parse(worker_id).pid


def model_saw(model: FakeModel, marker: str, answered: bool = False) -> int:
    """How many requests for `marker` the model received (or answered in full)."""
    recorded = model.answered if answered else model.requests
    return sum(1 for r in recorded if any(marker in str(m.get("content")) for m in r.body.get("messages") or []
                                          if m.get("role") == "user"))


def test_kill_the_worker_mid_turn_then_redis_and_the_stack_comes_back():
    """Under `make run`, kill -9 of the worker or of the embedded Redis stopped the whole stack, api included,
    until a person restarted it. Now the supervisor restarts each (Redis on the same port), the
    services reconnect by themselves, the interrupted turn completes exactly once, new turns complete, and
    `hstack run` keeps running."""
    with FakeModel() as model:
        model.on(MARKER, text("a first answer nobody must see", latency=IN_FLIGHT_SECONDS),
                 text("the answer, given once"))
        run = HstackRun(LLM_BASE_URL=model.base_url, LLM_API_KEY="sk-e2e-fake", LLM_MODEL="scripted",
                        TURN_LEASE_SECONDS="3", TURN_HEARTBEAT_SECONDS="0.5", SWEEP_INTERVAL_SECONDS="1")
        with run:
            run.wait_ready()
            key = run.create_user("heals")
            with run.client(key) as c:
                sid = c.post("/v1/sessions", json={}).json()["id"]
                turn = c.post(f"/v1/sessions/{sid}/turns", json={"input": f"a {MARKER}, please"}).json()
                wait_until(lambda: model_saw(model, MARKER) == 1, timeout=60, what="the model to be asked")
                assert c.get(f"/v1/turns/{turn['id']}").json()["status"] == "running"

                os.kill(holder_pid(run, turn["id"]), signal.SIGKILL)  # the one running it, of one per core
                wait_until(lambda: run.said("was killed by SIGKILL: restarting it in"), timeout=30,
                           what="the supervisor to notice the worker died")
                os.kill(run.child_pid("redis-server"), signal.SIGKILL)
                wait_until(lambda: run.said("redis was killed by SIGKILL: restarting it in"), timeout=30,
                           what="the supervisor to notice Redis died")
                wait_until(lambda: run.said("  redis     back") and run.said(" back   queue turns"), timeout=60,
                           what="Redis and the worker to be back")

                done = wait_for_turn(c, turn["id"], timeout=120)
                assert done["status"] == "completed" and done["output"] == "the answer, given once"
                assert model_saw(model, MARKER, answered=True) == 1, "the model answered that turn once"
                messages = c.get(f"/v1/sessions/{sid}/messages").json()["data"]
                assert [m["content"] for m in messages if m["role"] == "assistant"] == ["the answer, given once"]

                after = c.post(f"/v1/sessions/{sid}/turns", json={"input": "and after Redis came back?"}).json()
                assert wait_for_turn(c, after["id"], timeout=60)["status"] == "completed"
                with run.client() as admin:
                    assert admin.get("/readyz").status_code == 200

            assert run.running(), "hstack run is still running"
            assert "stopping the stack" not in run.output()
            assert run.stop() == 0
