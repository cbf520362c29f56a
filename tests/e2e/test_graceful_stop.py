"""SIGTERM under load: the worker stops claiming, hands its running turns back and exits within the grace."""

from __future__ import annotations

import signal
import time
from collections import Counter

import pytest

from tests.fakes.model import text, tool_call
from tests.support.processes import Stack, wait_for_turn

pytestmark = [pytest.mark.e2e, pytest.mark.once]  # process behaviour: see tests/conftest.py

GRACE = 3
SESSIONS = 4
TURNS_PER_SESSION = 6


def marker_of(body: dict) -> str | None:
    """The turn a model request belongs to: the `stop-test-…` marker of its latest user message."""
    users = [m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user"]
    return next((word for word in users[-1].split() if word.startswith("stop-test-")), None) if users else None


def test_sigterm_under_load_exits_within_the_grace_and_runs_no_turn_twice(fake_model, model):
    """Reproduction: SIGTERM under load became a kill after 10 s: the worker kept claiming new turns after
    SIGTERM, 25 of 75 turns were left running and re-ran their model calls after the restart."""
    stack = Stack(model_url=fake_model.base_url, env_overrides={"WORKER_SHUTDOWN_GRACE_SECONDS": str(GRACE)})
    model.latency = 0.8  # every turn: a tool call, then its answer; draining one session takes ~10 s
    markers = [f"stop-test-{s}-{t}" for s in range(SESSIONS) for t in range(TURNS_PER_SESSION)]
    for m in markers:
        model.on(m, tool_call([("write_file", {"path": f"{m}.txt", "content": m})]), text(f"done {m}"))
    with stack:
        stack.start_api()
        worker = stack.start_worker("worker-a", concurrency=8)
        clients = [stack.client(stack.create_user(f"e2e-stop-{n}")) for n in range(2)]
        posted = []
        for s in range(SESSIONS):
            c = clients[s % 2]
            sid = c.post("/v1/sessions", json={}).json()["id"]
            posted += [(c, c.post(f"/v1/sessions/{sid}/turns", json={"input": f"please {m}"}).json())
                       for m in markers[s * TURNS_PER_SESSION:(s + 1) * TURNS_PER_SESSION]]
        model.wait_for_requests(SESSIONS + 2, timeout=30)  # every session's first turn is under way

        started_before = {marker_of(r.body) for r in model.requests}
        sent_at = time.monotonic()
        worker.signal(signal.SIGTERM)
        worker.popen.wait(timeout=GRACE + 5)  # TimeoutExpired: the graceful stop became a kill
        after_sigterm = {marker_of(r.body) for r in model.requests if r.at > sent_at}

        model.latency = 0.0
        stack.start_worker("worker-b", concurrency=8)
        finished = [wait_for_turn(c, t["id"], timeout=90) for c, t in posted]
        for c in clients:
            c.close()

    assert after_sigterm <= started_before, "the stopping worker claimed turns it had not started"
    assert [t["status"] for t in finished] == ["completed"] * len(markers)
    assert sorted(t["output"] for t in finished) == sorted(f"done {m}" for m in markers)
    calls = Counter(marker_of(r.body) for r in model.requests if r.path == "/v1/chat/completions")
    assert {m: calls[m] for m in markers} == {m: 2 for m in markers}, "a turn asked the model twice for one step"
