"""Per-user slots: at most MAX_RUNNING_TURNS_PER_USER turns of a user are sent or running, even under races."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from shared.models.turns import TurnStatus
from shared.stores import turn_slots, turns
from tests.support.factories import make_session, make_user

LEASE = 30


def accept(db, user, session, text: str, cap: int):
    return turns.accept_turn(db, user.id, session.id, text, max_running=cap)


def test_concurrent_accepts_never_send_more_turns_than_the_cap(db):
    """Reproduction: every accepted turn was sent at once, so one user's burst filled the shared queue."""
    user = make_user(db)
    sessions = [make_session(db, user.id) for _ in range(8)]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda s: accept(db, user, s, "burst", 3), sessions))
    sent = [t for _, _, ready in results for t in ready]
    assert len(sent) == 3 and len({t.session_id for t in sent}) == 3
    waiting = [t for t, _, _ in results if turns.get_turn(db, None, t.id).enqueued_at is None]
    assert len(waiting) == 5


def test_a_second_turn_of_a_busy_session_waits_for_the_session_not_for_a_slot(db):
    user = make_user(db)
    session = make_session(db, user.id)
    first, _, sent = accept(db, user, session, "one", 4)
    second, _, sent_second = accept(db, user, session, "two", 4)
    assert [t.id for t in sent] == [first.id] and sent_second == []  # the session's drain runs it next


def test_a_claim_past_the_cap_is_refused_and_the_turn_waits_for_a_freed_slot(db):
    """claim_next is the hard guarantee: a redelivered task cannot start a user's turn past the cap."""
    user = make_user(db)
    busy, other = make_session(db, user.id), make_session(db, user.id)
    running, _ = turns.create_turn(db, user.id, busy.id, "running")
    turns.claim_next(db, busy.id, "w1", LEASE, max_running=1)
    behind, _ = turns.create_turn(db, user.id, other.id, "behind")

    assert turns.claim_next(db, other.id, "w2", LEASE, max_running=1) is None
    assert turns.get_turn(db, None, behind.id).status == TurnStatus.queued.value
    assert turn_slots.send_waiting(db, busy.id, 1) == []  # the slot is still taken

    turns.finish_turn(db, running.id, "w1", TurnStatus.completed, output="ok")
    assert [t.id for t in turn_slots.send_waiting(db, busy.id, 1)] == [behind.id]
    assert turns.claim_next(db, other.id, "w2", LEASE, max_running=1).id == behind.id


def test_a_released_turn_is_claimable_at_once_and_keeps_its_slot(db):
    user = make_user(db)
    session = make_session(db, user.id)
    turn, _ = turns.create_turn(db, user.id, session.id, "long job")
    turns.claim_next(db, session.id, "stopping", LEASE)

    released = turns.release_turn(db, turn.id, "stopping")
    assert released.status == TurnStatus.queued.value and released.worker_id is None
    assert released.enqueued_at is not None  # still holds its slot: it was sent again
    taken = turns.claim_next(db, session.id, "next", LEASE)  # no waiting for the lease to go stale
    assert taken.id == turn.id and taken.attempts == 2
    assert turns.release_turn(db, turn.id, "stopping") is None  # the old worker no longer owns it
