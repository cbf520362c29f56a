"""Turns through the real queue: one session runs strictly in order, different sessions in parallel."""

from __future__ import annotations

import threading
import uuid

from shared.queue.app import enqueue
from shared.queue.names import RUN_TURN
from shared.queue.payloads import RunTurn
from services.worker import tasks
from tests.fakes.model import Reply, text
from tests.services.worker.helpers import post_turn, wait_finished
from tests.support.factories import make_session
from tests.support.worker import inprocess_worker


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


class Rendezvous:
    """A scripted reply that answers "together" once `parties` calls were at the model at the same time: a call
    waits (bounded) for the others, so turns run one at a time would make the first answer "alone"."""

    def __init__(self, parties: int, timeout: float = 10.0) -> None:
        self.parties, self.timeout = parties, timeout
        self._arrived = threading.Condition()
        self._count = 0

    def __call__(self, body: dict) -> Reply:
        with self._arrived:
            self._count += 1
            self._arrived.notify_all()
            met = self._arrived.wait_for(lambda: self._count >= self.parties, self.timeout)
        return text("together" if met else "alone")


def test_turns_of_different_sessions_run_in_parallel(db, user, model):
    tags = [marker() for _ in range(5)]
    meet = Rendezvous(parties=2)
    posted = []
    for tag in tags:
        model.on(tag, meet)
        chat = make_session(db, user.id)
        posted.append(post_turn(db, user.id, chat.id, f"{tag} go"))

    with inprocess_worker():
        for turn in posted:
            enqueue(RUN_TURN, RunTurn(turn_id=turn.id, session_id=turn.session_id))
        done = [wait_finished(db, t.id, timeout=30) for t in posted]

    assert [(t.status, t.output) for t in done] == [("completed", "together")] * 5
    assert model.max_in_flight >= 2, "two turns were being answered at the same time"


def test_a_malformed_payload_is_dropped_not_retried():
    assert tasks.run_turn(bogus="payload") == 0
