"""The curator's sweep re-sends turns whose enqueue was lost or whose worker died, once per session."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import update

from services.curator.tasks import sweep
from shared.clock import utcnow
from shared.models.turns import Turn
from shared.models.turns import TurnStatus
from shared.queue.app import enqueue
from shared.queue.names import REVIEW_SESSION, RUN_TURN, SWEEP_TURNS
from shared.queue.payloads import RunTurn, SweepTurns
from shared.stores import turns
from tests.support.factories import make_session, make_user
from tests.support.reviews import due_review
from tests.support.waiting import wait_until
from tests.support.worker import inprocess_worker


def recorder():
    sent: list[tuple[str, RunTurn]] = []
    return sent, lambda name, payload: sent.append((name, payload))


def sent_for(sent, session_ids) -> list[tuple[str, str, str]]:
    return sorted((name, p.session_id, p.turn_id) for name, p in sent if name == RUN_TURN and p.session_id in session_ids)


def test_turns_queued_longer_than_the_threshold_are_resent_once_per_session(db, settings):
    user = make_user(db)
    first = make_session(db, user.id)
    second = make_session(db, user.id)
    a1, _ = turns.create_turn(db, user.id, first.id, "one")
    turns.create_turn(db, user.id, first.id, "two")
    b1, _ = turns.create_turn(db, user.id, second.id, "three")
    sent, send = recorder()

    sweep(settings.model_copy(update={"turn_requeue_after_seconds": 0}), send)

    assert sent_for(sent, {first.id, second.id}) == sorted(
        [(RUN_TURN, first.id, a1.id), (RUN_TURN, second.id, b1.id)]
    )


def test_a_review_nobody_picked_up_is_resent_once(db, settings):
    user = make_user(db)
    session = make_session(db, user.id)
    review = due_review(db, user.id, session.id)
    sent, send = recorder()

    sweep(settings.model_copy(update={"review_lease_seconds": 0}), send)
    sweep(settings.model_copy(update={"review_lease_seconds": 60}), send)

    resent = [(p.session_id, p.review_id) for name, p in sent if name == REVIEW_SESSION and p.session_id == session.id]
    assert resent == [(session.id, review.id)]


def test_a_turn_queued_a_moment_ago_is_left_alone(db, settings):
    user = make_user(db)
    session = make_session(db, user.id)
    turns.create_turn(db, user.id, session.id, "fresh")
    sent, send = recorder()

    sweep(settings.model_copy(update={"turn_requeue_after_seconds": 3600}), send)

    assert sent_for(sent, {session.id}) == []


def test_a_running_turn_whose_worker_stopped_heartbeating_is_resent(db, settings):
    user = make_user(db)
    session = make_session(db, user.id)
    turn, _ = turns.create_turn(db, user.id, session.id, "orphaned")
    assert turns.claim_next(db, session.id, "worker@gone", lease_seconds=30).id == turn.id
    sent, send = recorder()

    sweep(settings.model_copy(update={"turn_lease_seconds": 3600, "turn_requeue_after_seconds": 3600}), send)
    assert sent_for(sent, {session.id}) == [], "a turn with a fresh lease is not taken over"

    sweep(settings.model_copy(update={"turn_lease_seconds": 0}), send)
    assert sent_for(sent, {session.id}) == [(RUN_TURN, session.id, turn.id)]


def wait_for_status(db, user_id: str, turn_id: str, status: str, timeout: float = 20.0):
    def reached():
        turn = turns.get_turn(db, user_id, turn_id)
        return turn if turn.status == status else None

    return wait_until(reached, timeout, what=f"turn {turn_id} to be {status}")


def test_a_turn_whose_enqueue_was_lost_is_answered_after_a_sweep(db, settings, model, monkeypatch):
    """Through real Celery workers: the curator queue runs the sweep, the turns queue runs the turn."""
    user = make_user(db)
    session = make_session(db, user.id)
    turn, _ = turns.create_turn(db, user.id, session.id, "lost-enqueue: are you there?")  # never enqueued
    with db.write() as s:  # older than any other test's turn, so this sweep sends no other test's work
        s.execute(update(Turn).where(Turn.id == turn.id).values(created_at=utcnow() - timedelta(hours=2)))
    monkeypatch.setattr(settings, "turn_requeue_after_seconds", 3600.0)

    with inprocess_worker(queues=("curator", "turns")):
        enqueue(SWEEP_TURNS, SweepTurns())
        done = wait_for_status(db, user.id, turn.id, TurnStatus.completed.value)

    assert done.output == "You said: lost-enqueue: are you there?"
    assert sum("lost-enqueue" in str(r.body) for r in model.requests) == 1
