"""delegate_task with the real processes: three children run at once on one worker and each summary reaches the
parent; a looping child is stopped by its own budget and reported; a cancelled parent leaves no child running."""

from __future__ import annotations

import json
import signal
import threading
import time

import pytest
import redis

from shared.messaging import events
from tests.fakes.model import text, tool_call
from tests.support.processes import Stack, wait_for_turn
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.once]  # process behaviour: see tests/conftest.py

CHILD_SECONDS = 1.0  # how long the scripted model takes to answer a child


@pytest.fixture(scope="module")
def stack(fake_model):
    overrides = {"RATE_LIMIT_PER_MINUTE": "0", "TURN_RATE_LIMIT_PER_MINUTE": "0", "DELEGATE_MAX_CHILDREN": "3",
                 "DELEGATE_MAX_ITERATIONS": "3", "TURN_HEARTBEAT_SECONDS": "0.2"}
    with Stack(model_url=fake_model.base_url, env_overrides=overrides) as s:
        s.start_api()
        s.start_worker(concurrency=4)
        yield s


def start_turn(c, text_in: str) -> tuple[str, str]:
    session = c.post("/v1/sessions", json={}).raise_for_status().json()
    turn = c.post(f"/v1/sessions/{session['id']}/turns", json={"input": text_in}).raise_for_status().json()
    return session["id"], turn["id"]


def delegate_result(c, session_id: str) -> dict:
    messages = c.get(f"/v1/sessions/{session_id}/messages").raise_for_status().json()["data"]
    return json.loads(next(m["content"] for m in messages if m["role"] == "tool"))


def stream(stack: Stack, turn_id: str) -> list[tuple[str, dict]]:
    r = redis.Redis.from_url(stack.redis_url, decode_responses=True)
    return [events.decode(i, f)[1:] for i, f in r.xrange(events.stream_key(turn_id))]


def timed(summary: str, intervals: list[tuple[float, float]]):
    """A child's answer after CHILD_SECONDS; the model records when it was asked and when it answered."""
    def answer(body: dict):
        start = time.monotonic()
        threading.Event().wait(CHILD_SECONDS)  # the model thinking, not the test waiting
        intervals.append((start, time.monotonic()))
        return text(summary)
    return answer


def test_three_children_run_at_once_on_one_worker_and_every_summary_reaches_the_parent(stack, model):
    key = stack.create_user("e2e-delegate-parallel")
    intervals: list[tuple[float, float]] = []
    goals = {"find the trains": "Train at 9:04.", "find a hotel": "Hotel Sol, 80 EUR.",
             "find a museum": "Prado, open till 8."}
    model.on("plan the trip", tool_call([("delegate_task", {"tasks": [{"goal": g} for g in goals]})]),
             text("Trip planned."))
    for goal, summary in goals.items():
        model.on(goal, timed(summary, intervals))
    with stack.client(key) as c:
        session_id, turn_id = start_turn(c, "plan the trip")
        assert wait_for_turn(c, turn_id, timeout=60)["output"] == "Trip planned."
        got = delegate_result(c, session_id)

    assert len(intervals) == 3
    assert max(start for start, _ in intervals) < min(end for _, end in intervals), "the children overlapped"
    assert [(r["status"], r["summary"]) for r in got["results"]] == [("completed", s) for s in goals.values()]
    kinds = [kind for kind, _ in stream(stack, turn_id)]
    assert kinds.count("delegate.started") == 3 and kinds.count("delegate.completed") == 3


def test_a_looping_child_hits_its_budget_and_the_parent_is_told(stack, model):
    key = stack.create_user("e2e-delegate-loop")
    model.on("check the loop", tool_call([("delegate_task", {"tasks": [{"goal": "spin on the files"}]})]),
             text("The subtask ran out of steps."))
    model.on("spin on the files", *[tool_call([("list_files", {"path": f"d{i}"})]) for i in range(10)])
    model.on("maximum number of tool-calling iterations", text("I only listed folders."))
    with stack.client(key) as c:
        session_id, turn_id = start_turn(c, "check the loop")
        assert wait_for_turn(c, turn_id, timeout=60)["status"] == "completed"
        [result] = delegate_result(c, session_id)["results"]

    assert (result["status"], result["summary"]) == ("budget_exhausted", "I only listed folders.")
    failed = [d for kind, d in stream(stack, turn_id) if kind == "delegate.failed"]
    assert [d["status"] for d in failed] == ["budget_exhausted"]


def test_a_parent_cancelled_mid_way_leaves_no_child_running(stack, model):
    key = stack.create_user("e2e-delegate-cancel")
    asked: list[str] = []

    def held(body: dict):
        asked.append("child")
        return text(" ".join(["still working"] * 400), chunk_delay=0.1)  # still streaming when the parent stops

    model.on("do two slow things", tool_call([("delegate_task", {"tasks": [{"goal": "slow A"}, {"goal": "slow B"}]})]))
    model.on("slow A", held)
    model.on("slow B", held)
    with stack.client(key) as c:
        _, turn_id = start_turn(c, "do two slow things")
        wait_until(lambda: len(asked) == 2, timeout=60, what="both children to be at the model")
        children = [d["child_turn_id"] for kind, d in stream(stack, turn_id) if kind == "delegate.started"]
        assert [c.get(f"/v1/turns/{t}").json()["status"] for t in children] == ["running", "running"]

        assert c.post(f"/v1/turns/{turn_id}/cancel").raise_for_status().json()["status"] == "cancelled"

        ended = [wait_for_turn(c, t, timeout=20)["status"] for t in children]
    assert ended == ["cancelled", "cancelled"]
    stopped = [d for kind, d in stream(stack, turn_id) if kind == "delegate.failed"]
    assert sorted(d["child_turn_id"] for d in stopped) == sorted(children)
    assert {d["status"] for d in stopped} == {"cancelled"}


def test_a_worker_killed_mid_child_has_the_child_finished_elsewhere_and_the_parent_answers(fake_model, model):
    crash = Stack(model_url=fake_model.base_url, env_overrides={
        "DELEGATE_MAX_CHILDREN": "3", "TURN_LEASE_SECONDS": "2", "TURN_HEARTBEAT_SECONDS": "0.3",
        "TURN_REQUEUE_AFTER_SECONDS": "1", "SWEEP_INTERVAL_SECONDS": "0.5"})
    model.on("survive the crash", tool_call([("delegate_task", {"tasks": [{"goal": "crash-child work"}]})]),
             text("The subtask survived."))
    model.on("crash-child work", text("never delivered", latency=120), text("Done after the crash."))
    with crash:
        crash.start_api()
        doomed = crash.start_worker("worker-a", concurrency=4)
        key = crash.create_user("e2e-delegate-crash")
        with crash.client(key) as c:
            session_id, turn_id = start_turn(c, "survive the crash")
            wait_until(lambda: any("crash-child work" in json.dumps(r.body) for r in model.requests), timeout=30,
                       what="the child at the model")
            doomed.signal(signal.SIGKILL)
            doomed.popen.wait(10)

            crash.start_worker("worker-b", concurrency=4)
            crash.start_curator()
            done = wait_for_turn(c, turn_id, timeout=60)
            [result] = delegate_result(c, session_id)["results"]

    assert (done["status"], done["output"]) == ("completed", "The subtask survived.")
    assert (result["status"], result["summary"]) == ("completed", "Done after the crash.")
