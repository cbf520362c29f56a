"""When a background review comes due: user turns without a memory write, model calls without a skill write."""

from __future__ import annotations

import pytest
import redis

from shared.queue.names import QUEUE_REVIEW, REVIEW_SESSION, ROUTES
from shared.stores import reviews, sessions
from tests.fakes.model import fail, text, tool_call
from services.worker.review import trigger
from tests.services.worker.reviewing import catch_sends, turns
from tests.support.statements import statements_of

MEMORY_ADD = ("memory", {"action": "add", "target": "memory", "content": "The build runs on Fridays."})
LOOK = ("skills_list", {})


@pytest.fixture
def sent(db, monkeypatch):
    return catch_sends(db, monkeypatch)


def test_ten_plain_turns_make_one_memory_and_skill_review_due_committed_before_it_is_sent(
        db, user, session, model, make_runtime, sent):
    runtime = make_runtime()
    turns(db, runtime, user.id, session.id, *[f"question {n}" for n in range(9)])
    assert sent.sent == []

    [tenth] = turns(db, runtime, user.id, session.id, "question 9")

    [(name, payload, status)] = sent.sent
    assert (name, status, ROUTES[name]["queue"]) == (REVIEW_SESSION, "queued", QUEUE_REVIEW)
    review = reviews.get_review(db, payload["review_id"])
    assert payload == {"session_id": session.id, "review_id": review.id}
    assert (review.trigger, review.turn_id, review.user_id) == ("both", tenth.id, user.id)


def test_a_memory_write_puts_the_memory_review_off(db, user, session, model, make_runtime, sent):
    runtime = make_runtime(memory_review_interval=3, skill_review_interval=0)
    model.script(text("one"), tool_call([MEMORY_ADD]), text("saved"))
    turns(db, runtime, user.id, session.id, "one", "two", "three", "four")
    assert sent.sent == []  # the write in turn 2 started the count again

    turns(db, runtime, user.id, session.id, "five")
    assert [reviews.get_review(db, i).trigger for i in sent.review_ids] == ["memory"]


def test_a_valid_memory_call_the_store_refused_still_puts_the_memory_review_off(db, user, session, model,
                                                                              make_runtime, sent):
    """As Hermes Agent does, any structurally valid memory call resets the count, not only a success."""
    runtime = make_runtime(memory_review_interval=3, skill_review_interval=0)
    no_match = ("memory", {"action": "remove", "target": "memory", "old_text": "nothing like this is stored"})
    model.script(text("one"), tool_call([no_match]), text("nothing to remove"))
    turns(db, runtime, user.id, session.id, "one", "two", "three", "four")
    assert sent.sent == []

    turns(db, runtime, user.id, session.id, "five")
    assert [reviews.get_review(db, i).trigger for i in sent.review_ids] == ["memory"]


def test_model_calls_count_across_turns_for_the_skill_review(db, user, session, model, make_runtime, sent):
    runtime = make_runtime(memory_review_interval=0)
    four_calls = [tool_call([LOOK]), tool_call([LOOK]), tool_call([LOOK]), text("done")]
    model.script(*four_calls, *four_calls)
    turns(db, runtime, user.id, session.id, "first", "second")
    assert sent.sent == []  # 8 model calls so far

    model.script(*four_calls)
    turns(db, runtime, user.id, session.id, "third")
    assert [reviews.get_review(db, i).trigger for i in sent.review_ids] == ["skill"]


def test_a_failed_turn_counts_but_never_makes_a_review_due(db, user, session, model, make_runtime, sent):
    runtime = make_runtime(memory_review_interval=1, skill_review_interval=0)
    model.script(fail(400, "bad request"))
    [failed] = turns(db, runtime, user.id, session.id, "this one fails")
    assert failed.status == "failed" and sent.sent == []
    assert reviews.counters(db, session.id).turns_since_memory == 1

    turns(db, runtime, user.id, session.id, "this one answers")
    assert len(sent.sent) == 1


def test_zero_intervals_turn_reviews_off(db, user, session, model, make_runtime, sent):
    runtime = make_runtime(memory_review_interval=0, skill_review_interval=0)
    turns(db, runtime, user.id, session.id, *[f"q{n}" for n in range(12)])
    assert sent.sent == [] and reviews.counters(db, session.id) is None


def test_a_review_whose_send_was_lost_is_sent_after_the_next_turn(db, user, session, model, make_runtime, sent,
                                                                  monkeypatch):
    runtime = make_runtime(memory_review_interval=1, skill_review_interval=0, review_lease_seconds=60)

    def broker_down(name, payload):
        raise redis.ConnectionError("broker down")

    monkeypatch.setattr(trigger, "enqueue", broker_down)
    [turn] = turns(db, runtime, user.id, session.id, "the send of this review is lost")
    assert turn.status == "completed"
    [lost] = reviews.list_reviews(db, user.id, session_id=session.id)
    assert lost[0].status == "queued"

    monkeypatch.setattr(trigger, "enqueue", sent)
    turns(db, make_runtime(memory_review_interval=2, skill_review_interval=0, review_lease_seconds=0), user.id,
          session.id, "next turn")
    assert sent.review_ids == [lost[0].id]


def test_a_turn_is_counted_from_the_rows_its_loop_stored_without_reading_them_back(
        db, user, session, model, make_runtime, sent):
    """The loop knows the turn's rows (tool calls and results included); the count needs no read of them, and
    counts what a read would have found."""
    runtime = make_runtime(memory_review_interval=2, skill_review_interval=0)
    model.script(tool_call([LOOK]), text("looked"))
    with statements_of(db) as statements:
        [first] = turns(db, runtime, user.id, session.id, "look around")
    assert not [s for s in statements if "FROM messages" in s and "ORDER BY messages.turn_position" in s]
    read_back = trigger.turn_count(first, sessions.turn_messages(db, first.id), completed=True)
    assert reviews.counters(db, session.id).iterations_since_skill == read_back.iterations == 2
    turns(db, runtime, user.id, session.id, "and again")
    assert [reviews.get_review(db, i).trigger for i in sent.review_ids] == ["memory"]
