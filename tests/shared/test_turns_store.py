"""The turns store: acceptance, idempotency, one-at-a-time claims per session, recovery."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import update

from shared.errors import IdempotencyConflict, InvalidState, NotFound
from shared.models.turns import Turn, TurnStatus
from shared.stores import sessions, turns
from tests.support.factories import make_session, make_user


def test_turns_get_consecutive_seqs_even_when_accepted_concurrently(db):
    user = make_user(db)
    session = make_session(db, user.id)
    with ThreadPoolExecutor(16) as pool:
        created = list(pool.map(lambda i: turns.create_turn(db, user.id, session.id, f"t{i}")[0], range(40)))
    assert sorted(t.seq for t in created) == list(range(1, 41))


def test_an_idempotency_key_returns_the_same_turn_and_refuses_a_different_body(db):
    user = make_user(db)
    session = make_session(db, user.id)
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(
            lambda _: turns.create_turn(db, user.id, session.id, "hi", idempotency_key="k", request_hash="h"), range(8)))
    assert len({t.id for t, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    with pytest.raises(IdempotencyConflict):
        turns.create_turn(db, user.id, session.id, "other", idempotency_key="k", request_hash="h2")


def test_a_turn_for_another_users_session_is_not_found(db):
    owner, stranger = make_user(db), make_user(db)
    session = make_session(db, owner.id)
    with pytest.raises(NotFound):
        turns.create_turn(db, stranger.id, session.id, "hi")


def test_claims_follow_seq_and_never_run_two_turns_of_one_session(db):
    user = make_user(db)
    session = make_session(db, user.id)
    first, _ = turns.create_turn(db, user.id, session.id, "one")
    second, _ = turns.create_turn(db, user.id, session.id, "two")

    barrier = threading.Barrier(8)

    def claim(i: int):
        barrier.wait()
        return turns.claim_next(db, session.id, f"w{i}", lease_seconds=30)

    with ThreadPoolExecutor(8) as pool:
        claimed = [t for t in pool.map(claim, range(8)) if t is not None]
    assert [t.id for t in claimed] == [first.id]
    assert turns.finish_turn(db, first.id, claimed[0].worker_id, TurnStatus.completed, output="ok")
    assert turns.claim_next(db, session.id, "w9", lease_seconds=30).id == second.id


def test_a_turn_whose_worker_stopped_heartbeating_is_taken_over(db):
    user = make_user(db)
    session = make_session(db, user.id)
    turn, _ = turns.create_turn(db, user.id, session.id, "one")
    assert turns.claim_next(db, session.id, "dead-worker", lease_seconds=30).attempts == 1
    assert turns.claim_next(db, session.id, "other", lease_seconds=30) is None
    taken = turns.claim_next(db, session.id, "other", lease_seconds=0)
    assert (taken.id, taken.attempts, taken.worker_id) == (turn.id, 2, "other")
    assert not turns.finish_turn(db, turn.id, "dead-worker", TurnStatus.completed), "the old owner lost the turn"


def test_a_claim_stores_the_turns_message_once_however_often_the_turn_is_claimed(db):
    """The claim stores the user's message (Postgres: in the claim's own statement); a takeover keeps it."""
    user = make_user(db)
    session = make_session(db, user.id)
    turn, _ = turns.create_turn(db, user.id, session.id, "the question, as asked")
    first = turns.claim_next(db, session.id, "dead-worker", lease_seconds=30)
    again = turns.claim_next(db, session.id, "other", lease_seconds=0)
    assert (first.status, first.attempts, again.attempts, again.worker_id) == ("running", 1, 2, "other")
    assert again.started_at == first.started_at and again.heartbeat_at >= first.heartbeat_at
    stored = [(m.turn_id, m.turn_position, m.role, m.content) for m in sessions.list_messages(db, session.id)]
    assert stored == [(turn.id, 0, "user", "the question, as asked")]


def test_finishing_stores_the_answer_with_the_outcome_and_a_worker_that_lost_the_turn_stores_nothing(db):
    """Postgres finishes and stores the answer in one statement: nothing of it when the turn is not this worker's."""
    user = make_user(db)
    session = make_session(db, user.id)
    turn, _ = turns.create_turn(db, user.id, session.id, "one")
    turns.claim_next(db, session.id, "dead-worker", lease_seconds=30)
    turns.claim_next(db, session.id, "other", lease_seconds=0)  # taken over
    answer = {"role": "assistant", "content": "from the old owner", "turn_id": turn.id, "turn_position": 1}
    assert not turns.finish_turn(db, turn.id, "dead-worker", TurnStatus.completed, output="x", messages=[answer])
    assert [m.role for m in sessions.list_messages(db, session.id)] == ["user"]
    mine = {**answer, "content": "the answer"}
    assert turns.finish_turn(db, turn.id, "other", TurnStatus.completed, output="the answer", messages=[mine])
    assert turns.finish_turn(db, turn.id, "other", TurnStatus.completed, output="again", messages=[mine]) is False
    stored = [(m.turn_position, m.role, m.content) for m in sessions.list_messages(db, session.id)]
    assert stored == [(0, "user", "one"), (1, "assistant", "the answer")]
    assert turns.get_turn(db, user.id, turn.id).output == "the answer"


def test_cancel_stops_a_queued_turn_and_flags_a_running_one(db):
    user = make_user(db)
    session = make_session(db, user.id)
    running, _ = turns.create_turn(db, user.id, session.id, "one")
    queued, _ = turns.create_turn(db, user.id, session.id, "two")
    turns.claim_next(db, session.id, "w", lease_seconds=30)

    assert turns.request_cancel(db, user.id, queued.id).status == TurnStatus.cancelled.value
    assert turns.request_cancel(db, user.id, running.id).status == TurnStatus.running.value
    assert turns.heartbeat(db, [running.id], "w") == {running.id}
    with pytest.raises(InvalidState):
        turns.request_cancel(db, user.id, queued.id)


def test_the_sweeper_resends_forgotten_queued_turns_and_orphans_once(db):
    user = make_user(db)
    idle = make_session(db, user.id)
    crashed = make_session(db, user.id)
    waiting, _ = turns.create_turn(db, user.id, idle.id, "never enqueued")
    orphan, _ = turns.create_turn(db, user.id, crashed.id, "worker died")
    turns.claim_next(db, crashed.id, "dead", lease_seconds=30)

    picked = {t.id for t in turns.turns_to_resend(db, requeue_after=0, lease_seconds=0)}
    assert {waiting.id, orphan.id} <= picked
    again = {t.id for t in turns.turns_to_resend(db, requeue_after=60, lease_seconds=60)}
    assert not again & {waiting.id, orphan.id}, "a turn just re-sent is not re-sent again at once"


def test_queued_turns_behind_a_live_turn_are_left_alone(db):
    user = make_user(db)
    session = make_session(db, user.id)
    turns.create_turn(db, user.id, session.id, "running")
    behind, _ = turns.create_turn(db, user.id, session.id, "behind")
    turns.claim_next(db, session.id, "alive", lease_seconds=30)
    with db.write() as s:
        s.execute(update(Turn).where(Turn.id == behind.id).values(enqueued_at=None))
    assert behind.id not in {t.id for t in turns.turns_to_resend(db, requeue_after=0, lease_seconds=30)}


def test_freeing_dead_holders_leases_touches_only_their_running_turns(db):
    """The recovery sweep's write: the dead holder's running turn becomes claimable at once (and is marked sent);
    a live holder's turn, a parked one and one already taken over are left alone."""
    user = make_user(db)
    dead_run, live_run = make_session(db, user.id), make_session(db, user.id)
    doomed, _ = turns.create_turn(db, user.id, dead_run.id, "one")
    kept, _ = turns.create_turn(db, user.id, live_run.id, "two")
    turns.claim_next(db, dead_run.id, "worker@h_1:10:1:1", lease_seconds=30)
    turns.claim_next(db, live_run.id, "worker@h%1:11:1:1", lease_seconds=30)
    assert {"worker@h_1:10:1:1", "worker@h%1:11:1:1"} <= turns.running_holders(db, "@h")
    assert "worker@h%1:11:1:1" not in turns.running_holders(db, "@h_1:"), "wildcards in a hostname match themselves"

    freed = turns.free_leases(db, ["worker@h_1:10:1:1", "worker@nowhere:1:1:1"], lease_seconds=30)

    assert [t.id for t in freed] == [doomed.id] and freed[0].enqueued_at is not None
    assert turns.free_leases(db, ["worker@h_1:10:1:1"], lease_seconds=30) == [], "a second sweep sends it no more"
    assert turns.claim_next(db, live_run.id, "other", lease_seconds=30) is None
    taken = turns.claim_next(db, dead_run.id, "other", lease_seconds=30)
    assert (taken.id, taken.attempts, taken.worker_id) == (doomed.id, 2, "other")
    assert turns.free_leases(db, ["worker@h_1:10:1:1"], lease_seconds=30) == [], "a taken-over turn stays taken"
    assert turns.get_turn(db, user.id, kept.id).worker_id == "worker@h%1:11:1:1"
