"""The reviews store: counters that make a review due, one lease per session, a call ledger written once."""

from __future__ import annotations

import pytest

from shared.models.reviews import CallOutcome, ReviewStatus
from shared.stores import reviews, sessions
from shared.stores.reviews import Intervals, LeaseLost, TurnCount
from tests.support.factories import make_session, make_user
from tests.support.reviews import due_review, finished_turn

EVERY_TEN = Intervals(memory=10, skill=10)
PROMPT = "You are the frozen test prompt."


def plain(turn, *, iterations: int = 1, memory: bool = False, after_skill: int | None = None,
          completed: bool = True) -> TurnCount:
    return TurnCount(session_id=turn.session_id, turn_id=turn.id, seq=turn.seq, iterations=iterations,
                     memory_written=memory, iterations_after_skill_write=after_skill, completed=completed)


@pytest.fixture
def chat(db):
    user = make_user(db)
    return make_session(db, user.id)


def run_turns(db, chat, n: int, intervals: Intervals = EVERY_TEN, **kwargs) -> list:
    """n finished turns counted one by one; returns what each count returned."""
    return [reviews.count_turn(db, plain(finished_turn(db, chat.user_id, chat.id), **kwargs), intervals, PROMPT, 60)
            for _ in range(n)]


def test_a_memory_and_skill_review_come_due_on_the_tenth_plain_turn(db, chat):
    made = run_turns(db, chat, 10)

    assert made[:9] == [None] * 9
    review = made[9]
    assert (review.trigger, review.status, review.system_prompt) == ("both", "queued", PROMPT)
    last = sessions.list_messages(db, chat.id)[-1]
    assert (last.role, review.through_message_id, review.turn_id) == ("assistant", last.id, last.turn_id)
    counter = reviews.counters(db, chat.id)
    assert (counter.turns_since_memory, counter.iterations_since_skill) == (0, 0)


def test_iterations_count_across_turns_and_a_write_resets_its_own_counter(db, chat):
    made = run_turns(db, chat, 2, iterations=4) + run_turns(db, chat, 1, iterations=4, memory=True)
    assert [r.trigger if r else None for r in made] == [None, None, "skill"]

    made = run_turns(db, chat, 1, iterations=3, after_skill=1)
    counter = reviews.counters(db, chat.id)
    assert made == [None] and (counter.iterations_since_skill, counter.turns_since_memory) == (1, 1)


def test_only_a_completed_turn_makes_a_review_due_and_zero_disables(db, chat):
    assert run_turns(db, chat, 10, completed=False) == [None] * 10
    assert reviews.counters(db, chat.id).turns_since_memory == 10
    assert run_turns(db, chat, 1, intervals=Intervals(memory=0, skill=0)) == [None]
    assert run_turns(db, chat, 1)[0].trigger == "both"


def test_a_turn_counted_twice_counts_once(db, chat):
    turn = finished_turn(db, chat.user_id, chat.id)
    for _ in range(3):
        reviews.count_turn(db, plain(turn), EVERY_TEN, PROMPT, 60)
    assert reviews.counters(db, chat.id).turns_since_memory == 1


def test_one_review_of_a_session_runs_at_a_time_and_a_dead_workers_review_is_taken_over(db, chat):
    first, second = due_review(db, chat.user_id, chat.id), due_review(db, chat.user_id, chat.id)

    claimed = reviews.claim_next(db, chat.id, "reviewer-a", 60)
    assert claimed.id == first.id and claimed.attempts == 1
    assert reviews.claim_next(db, chat.id, "reviewer-b", 60) is None  # a live lease holds the session

    taken = reviews.claim_next(db, chat.id, "reviewer-b", 0)  # a zero lease: a's heartbeat counts as stale
    assert (taken.id, taken.worker_id, taken.attempts) == (first.id, "reviewer-b", 2)
    assert not reviews.heartbeat(db, first.id, "reviewer-a")
    with pytest.raises(LeaseLost):
        reviews.record_model_call(db, first.id, "reviewer-a", {"role": "assistant", "content": "late"}, 1, 1)
    assert not reviews.finish_review(db, first.id, "reviewer-a", ReviewStatus.completed)

    assert reviews.finish_review(db, first.id, "reviewer-b", ReviewStatus.completed, summary="Nothing to save.")
    assert reviews.claim_next(db, chat.id, "reviewer-b", 0).id == second.id
    reviews.finish_review(db, second.id, "reviewer-b", ReviewStatus.completed)
    assert reviews.claim_next(db, chat.id, "reviewer-c", 0) is None  # completed reviews never run again


def test_a_call_is_written_once_and_a_write_keeps_the_turns_that_came_after_its_trigger(db, chat):
    """A review's write reset the counter to 0, erasing the turns finished after it was triggered."""
    review = due_review(db, chat.user_id, chat.id)
    run_turns(db, chat, 3, intervals=Intervals(memory=0, skill=0))
    reviews.claim_next(db, chat.id, "reviewer-a", 60)
    reviews.start_call(db, review.id, "reviewer-a", 0, "call_1", "memory", '{"target": "user"}')
    with pytest.raises(LeaseLost):
        reviews.start_call(db, review.id, "reviewer-a", 0, "call_1", "memory", '{"target": "user"}')

    result = '{"success": true}'
    message = {"role": "tool", "tool_call_id": "call_1", "content": result}
    reviews.finish_call(db, review.id, "reviewer-a", 0, CallOutcome.applied, result, message, resets="memory")

    [call] = reviews.ledger(db, review.id)
    assert (call.outcome, call.result, call.finished_at is not None) == ("applied", result, True)
    assert reviews.get_review(db, review.id).messages == [message]
    assert reviews.counters(db, chat.id).turns_since_memory == 3


def test_a_review_nobody_picked_up_is_handed_back_by_the_sessions_next_turn(db, chat):
    review = due_review(db, chat.user_id, chat.id)

    def next_turn(lease_seconds: float):
        turn = finished_turn(db, chat.user_id, chat.id)
        return reviews.count_turn(db, plain(turn), Intervals(memory=0, skill=0), PROMPT, lease_seconds)

    assert next_turn(60) is None  # just sent
    assert next_turn(0).id == review.id  # a zero lease: nobody picked it up in time
    assert next_turn(60) is None  # sent again just now
    reviews.claim_next(db, chat.id, "reviewer-a", 60)
    assert next_turn(60) is None  # running under a live lease


def test_listing_shows_only_the_users_own_reviews(db, chat):
    review = due_review(db, chat.user_id, chat.id)
    other = make_user(db)
    theirs = make_session(db, other.id)
    due_review(db, other.id, theirs.id)

    mine = reviews.list_reviews(db, chat.user_id)
    assert [(r.id, calls) for r, calls in mine] == [(review.id, [])]
    assert reviews.list_reviews(db, chat.user_id, session_id=theirs.id) == []
