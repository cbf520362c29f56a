"""After a review saved something, one `review.completed` line reaches the conversation's next turn."""

from __future__ import annotations

import pytest

from shared.messaging import events
from shared.models.reviews import ReviewCall
from services.worker.review.drain import drain_reviews
from services.worker.review.notice import summary, writes
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import post_turn, stream
from tests.services.worker.reviewing import MEMORY, SKILL, catch_sends, turns

PREFERENCE = "User wants every answer in British English."
REMEMBER = ("memory", {"action": "add", "target": "user", "content": PREFERENCE})
SKILL_MD = ("---\nname: release-notes\ndescription: Draft release notes from the changelog.\n---\n"
            "1. Read CHANGELOG.md.\n")
CREATE = ("skill_manage", {"action": "create", "name": "release-notes", "content": SKILL_MD})


@pytest.fixture
def sent(db, monkeypatch):
    return catch_sends(db, monkeypatch)


def notices(r, turn_id: str) -> list[dict]:
    return [data for kind, data in stream(r, turn_id) if kind == "review.completed"]


def test_a_review_that_saved_memory_is_announced_on_the_next_turn(db, user, session, model, make_runtime, sent):
    runtime = make_runtime(memory_review_interval=1, skill_review_interval=0)
    [first] = turns(db, runtime, user.id, session.id, "Always answer in British English, please.")
    model.on(MEMORY, tool_call([REMEMBER]), text("Saved."))
    assert drain_reviews(runtime, session.id) == 1
    assert notices(runtime.redis, first.id) == []  # the finished turn's stream is over: nobody would see it

    [second] = turns(db, runtime, user.id, session.id, "What colour is the sky?")

    [notice] = notices(runtime.redis, second.id)
    assert notice["summary"] == "Self-improvement review: saved to user profile"
    assert (notice["review_id"], notice["session_id"], notice["turn_id"]) == (sent.review_ids[0], session.id, first.id)
    assert notice["writes"] == [{"tool": "memory", "action": "add", "target": "user", "outcome": "applied"}]
    kinds = [kind for kind, _ in stream(runtime.redis, second.id)]
    assert kinds.index("turn.started") < kinds.index("review.completed") < kinds.index("turn.completed")
    assert runtime.redis.exists(events.notices_key(session.id)) == 0  # delivered once, not again


def test_a_turn_already_waiting_gets_the_notice_at_once(db, user, session, model, make_runtime, sent):
    runtime = make_runtime(memory_review_interval=0, skill_review_interval=1)
    turns(db, runtime, user.id, session.id, "How do I draft release notes?")
    waiting = post_turn(db, user.id, session.id, "And for the next release?")
    model.on(SKILL, tool_call([CREATE]), text("Done."))

    drain_reviews(runtime, session.id)

    [notice] = notices(runtime.redis, waiting.id)
    assert notice["summary"] == "Self-improvement review: skill 'release-notes' created"


def test_a_review_that_saved_nothing_says_nothing(db, user, session, model, make_runtime, sent):
    runtime = make_runtime(memory_review_interval=1, skill_review_interval=0)
    turns(db, runtime, user.id, session.id, "Hello there.")
    model.on(MEMORY, text("Nothing to save."))
    assert drain_reviews(runtime, session.id) == 1

    [second] = turns(db, runtime, user.id, session.id, "Thanks.")

    assert notices(runtime.redis, second.id) == []
    assert runtime.redis.exists(events.notices_key(session.id)) == 0


def call(name: str, arguments: str, outcome: str) -> ReviewCall:
    return ReviewCall(review_id="r", call_index=0, tool_call_id="c", name=name, arguments=arguments, outcome=outcome)


def test_the_summary_names_each_write_once_and_skips_reads_and_refusals():
    ledger = [
        call("skill_view", '{"name": "x"}', "done"),
        call("memory", '{"operations": [{"action": "add", "target": "memory", "content": "a"},'
                       ' {"action": "add", "target": "memory", "content": "b"}]}', "applied"),
        call("skill_manage", '{"action": "patch", "name": "deploy"}', "refused"),
        call("skill_manage", '{"action": "patch", "name": "notes"}', "staged"),
    ]
    assert summary(writes(ledger)) == ("Self-improvement review: saved to memory · "
                                       "skill 'notes' patched (awaiting approval)")
