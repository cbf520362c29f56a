"""Skill evolution with the real processes: the api queues a run, a reviewer runs it against the scripted
rubric and stages a better text, the owner approves it, the ledger restores the old text; a reviewer killed
with SIGKILL mid-run leaves nothing staged and its run is failed, not half-written."""

from __future__ import annotations

import json
import signal
import time

import pytest

from shared.db import Database
from shared.evolution.evidence import split
from shared.stores import evolution_runs, sessions, users
from tests.support.evolution import NEEDED, WEAK, rubric, script_rubric
from tests.support.processes import Stack, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.once]  # process behaviour: see tests/conftest.py


@pytest.fixture(scope="module")
def stack(fake_model):
    s = Stack(model_url=fake_model.base_url, env_overrides={"EVOLVE_MIN_SESSIONS": "4"})
    with s:
        s.start_api()
        s.start_worker("reviewer-1", queue="review")
        yield s


def user_with_weak_skill(stack: Stack, name: str, skill: str, held_out_needs: list[str] = NEEDED):
    """A user whose skill was loaded in 6 sessions; held-out sessions need `held_out_needs`."""
    key = stack.create_user(name)
    client = stack.client(key)
    client.post("/v1/skills", json={"name": skill, "content": WEAK.format(skill)}).raise_for_status()
    db = Database(stack.database_url)
    user_id = users.find_user(db, name).id
    ids = [sessions.create_session(db, user_id).id for _ in range(6)]
    _, held = split(ids)
    for n, session_id in enumerate(ids):
        needs = held_out_needs if session_id in held else NEEDED
        sessions.append_messages(db, session_id, [
            {"role": "user", "content": f"TASK: ship {skill} {n} STEPS: {' | '.join(needs)}"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "skill_view", "arguments": json.dumps({"name": skill})}}]},
            {"role": "user", "content": "no, you forgot to drain the queue"}])
    return client, db, user_id


def ended(client, run_id: str) -> dict | None:
    run = client.get(f"/v1/evolution/runs/{run_id}").raise_for_status().json()
    return run if run["status"] not in ("queued", "running") else None


def test_a_run_on_the_reviewer_proposes_a_better_text_approved_then_restored(stack, model):
    client, _, _ = user_with_weak_skill(stack, "evo-e2e", "ship-billing")
    script_rubric(model)
    started = time.monotonic()
    run = client.post("/v1/evolution/runs", json={"skill": "ship-billing"})
    assert run.status_code == 202, run.text
    done = wait_until(lambda: ended(client, run.json()["id"]), timeout=120, what="the evolution run to end")
    wall = time.monotonic() - started

    assert done["status"] == "proposed", done
    s = done["scores"]
    assert s["heldout_after"] >= s["heldout_before"] + s["margin"] and s["train_after"] >= s["train_before"]
    print(f"\nevolution run: {done['model_calls']} model calls, {done['prompt_tokens'] + done['completion_tokens']} "
          f"tokens, {done['metric_calls']} metric calls, {wall:.1f} s wall; train {s['train_before']} -> "
          f"{s['train_after']}, held-out {s['heldout_before']} -> {s['heldout_after']}")
    assert "evolve_skill" in stack.procs[-1].log()  # it ran on the reviewer
    assert "drain the queue" not in client.get("/v1/skills/ship-billing").json()["content"]

    approved = client.post(f"/v1/skills/pending/{done['staged_id']}", json={"decision": "approve"})
    assert approved.status_code == 200, approved.text
    assert "- drain the queue" in client.get("/v1/skills/ship-billing").json()["content"]
    restored = client.post(f"/v1/evolution/runs/{done['id']}/restore")
    assert restored.status_code == 200 and restored.json()["restored_at"]
    assert client.get("/v1/skills/ship-billing").json()["content"] == WEAK.format("ship-billing")


def test_a_run_whose_best_text_only_fits_train_proposes_nothing(stack, model):
    client, _, _ = user_with_weak_skill(stack, "evo-overfit", "fit-billing", ["rotate the keys", "warm the cache"])
    script_rubric(model)
    run = client.post("/v1/evolution/runs", json={"skill": "fit-billing"}).json()
    done = wait_until(lambda: ended(client, run["id"]), timeout=120, what="the evolution run to end")

    assert done["status"] == "no_improvement" and done["staged_id"] is None and done["proposal"] is None
    assert done["scores"]["train_after"] > done["scores"]["train_before"]
    assert done["scores"]["heldout_after"] == done["scores"]["heldout_before"]
    assert "only fits the train sessions" in done["summary"]
    assert client.get("/v1/skills/pending").json()["data"] == []


def test_a_reviewer_killed_mid_run_leaves_nothing_staged(stack, model):
    client, db, user_id = user_with_weak_skill(stack, "evo-kill", "kill-billing")
    reached = []

    def slow(body):
        reached.append(1)
        return rubric(body)

    model.on("[evolve:", *([slow] * 2_000))
    model.latency = 0.5
    run = client.post("/v1/evolution/runs", json={"skill": "kill-billing"}).json()
    wait_until(lambda: len(reached) >= 3, timeout=60, what="the run to be under way")
    reviewer = stack.procs[-1]
    reviewer.signal(signal.SIGKILL)
    reviewer.wait_stopped()
    model.latency = 0.0

    assert client.get(f"/v1/evolution/runs/{run['id']}").json()["status"] == "running"
    assert client.get("/v1/skills/pending").json()["data"] == []
    from datetime import timedelta

    from shared.clock import utcnow
    assert evolution_runs.fail_stale(db, utcnow() + timedelta(minutes=10), user_id) == 1  # the sweep, later
    found = client.get(f"/v1/evolution/runs/{run['id']}").json()
    assert found["status"] == "failed" and "stopped mid-way" in found["error"] and found["staged_id"] is None
    assert client.get("/v1/skills/kill-billing").json()["content"] == WEAK.format("kill-billing")
    stack.start_worker("reviewer-2", queue="review")
