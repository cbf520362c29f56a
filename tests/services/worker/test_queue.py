"""Turns through the real queue: one session runs strictly in order, different sessions in parallel."""

from __future__ import annotations

import uuid

from shared.queue.app import enqueue
from shared.queue.names import RUN_TURN
from shared.queue.payloads import RunTurn
from services.worker import tasks
from tests.fakes.model import text
from tests.services.worker.helpers import post_turn, wait_finished
from tests.support.factories import make_session
from tests.support.worker import inprocess_worker

LATENCY = 0.3


def marker() -> str:
    return f"mk-{uuid.uuid4().hex[:10]}"


def test_turns_of_one_session_run_one_at_a_time_in_order(db, user, model):
    chat = make_session(db, user.id)
    tag = marker()
    model.on(tag, *[text(f"answer {n}", latency=0.05) for n in range(5)])
    posted = [post_turn(db, user.id, chat.id, f"{tag} question {n}") for n in range(5)]

    with inprocess_worker():
        for turn in posted:
            enqueue(RUN_TURN, RunTurn(turn_id=turn.id, session_id=chat.id))
        done = [wait_finished(db, t.id, timeout=20) for t in posted]

    assert [t.output for t in done] == [f"answer {n}" for n in range(5)]
    for earlier, later in zip(done, done[1:]):
        assert earlier.finished_at <= later.started_at
    asked = [r.body["messages"][-1]["content"] for r in model.requests if tag in str(r.body)]
    assert asked == [f"{tag} question {n}" for n in range(5)]


def test_turns_of_different_sessions_run_in_parallel(db, user, model):
    tags = [marker() for _ in range(5)]
    posted = []
    for tag in tags:
        model.on(tag, text("done", latency=LATENCY))
        chat = make_session(db, user.id)
        posted.append(post_turn(db, user.id, chat.id, f"{tag} go"))

    with inprocess_worker():
        for turn in posted:
            enqueue(RUN_TURN, RunTurn(turn_id=turn.id, session_id=turn.session_id))
        assert all(wait_finished(db, t.id, timeout=20).status == "completed" for t in posted)

    arrivals = sorted(r.at for r in model.requests if any(tag in str(r.body) for tag in tags))
    assert len(arrivals) == 5
    assert arrivals[1] < arrivals[0] + LATENCY  # the 2nd call came in while the 1st was still being answered


def test_a_malformed_payload_is_dropped_not_retried():
    assert tasks.run_turn(bogus="payload") == 0
