"""The outbox's replies recorded at a turn's start: awaited until filled once, then due; a gone turn fails."""

from __future__ import annotations

import secrets

from shared.clock import utcnow
from shared.stores import outbox
from tests.support.factories import make_user


def test_a_reply_recorded_at_the_turn_start_waits_for_its_text_then_is_due_once(db):
    user = make_user(db)
    turn_id = f"trn_{secrets.token_hex(6)}"
    item = outbox.record(db, user.id, "telegram:1", "1", turn_id, None)
    assert item.id in {i.id for i in outbox.awaiting(db, limit=10_000)}
    assert item.id not in {i.id for i in outbox.due(db, limit=10_000)}, "nothing to send before the turn ends"
    assert outbox.fill(db, item.id, "the answer").text == "the answer"
    assert outbox.fill(db, item.id, "a second answer").text == "the answer", "filled once"
    assert item.id not in {i.id for i in outbox.awaiting(db, limit=10_000)}
    assert item.id in {i.id for i in outbox.due(db, limit=10_000)}
    assert outbox.report(db, item.id, True, None, None).status == "sent"
    assert outbox.report(db, item.id, True, None, None).attempts == 1, "a sent item is never counted again"


def test_a_reply_whose_turn_is_gone_fails_at_once(db):
    user = make_user(db)
    item = outbox.record(db, user.id, "callback:r", "", "trn_gone", None)
    row = outbox.report(db, item.id, False, "the turn of this reply is gone", None, give_up=True)
    assert row.status == "failed" and row.attempts == 1
    assert item.id in {i.id for i in outbox.by_status(db, "failed", limit=10_000)}


def test_a_refused_reply_is_retried_after_a_doubling_backoff_capped_at_the_maximum(db):
    user = make_user(db)
    item = outbox.record(db, user.id, "callback:r", "", None, "the answer")
    waits = []
    for _ in range(4):
        before = utcnow()
        row = outbox.report(db, item.id, False, "callback answered 503", None, backoff_base=10, backoff_max=35)
        waits.append(round((row.next_attempt_at - before).total_seconds() / 5) * 5)
    assert waits == [10, 20, 35, 35] and row.status == "pending" and row.attempts == 4
    assert item.id not in {i.id for i in outbox.due(db, limit=10_000)}, "not due before its backoff ends"
