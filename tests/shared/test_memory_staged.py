"""Memory writes staged for approval: per user, decided once, replayed under the rules, expired in time."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared.clock import utcnow
from shared.errors import InvalidState, NotFound
from shared.stores import memory_staged
from shared.stores.memory import MemoryRequest, MemoryStore
from tests.support.factories import make_user


def add(content: str, target: str = "memory") -> MemoryRequest:
    return MemoryRequest.from_args({"target": target, "action": "add", "content": content})


def test_approving_applies_the_write_and_deciding_twice_is_refused(db, settings, user):
    staged = memory_staged.stage(db, settings, user.id, add("Prefers metric units", "user"), session_id="ses_x")
    assert [row.id for row in memory_staged.list_pending(db, user.id)] == [staged.id]
    assert MemoryStore.for_user(settings, user.id).entries("user") == []

    row, result = memory_staged.decide(db, settings, user.id, staged.id, approve=True)
    assert row.status == "approved" and result.ok
    assert MemoryStore.for_user(settings, user.id).entries("user") == ["Prefers metric units"]
    assert memory_staged.list_pending(db, user.id) == []
    with pytest.raises(InvalidState) as refused:
        memory_staged.decide(db, settings, user.id, staged.id, approve=False)
    assert refused.value.code == "staged_write_decided"


def test_denying_leaves_the_files_alone(db, settings, user):
    staged = memory_staged.stage(db, settings, user.id, add("never saved"))
    row, result = memory_staged.decide(db, settings, user.id, staged.id, approve=False)
    assert row.status == "denied" and result is None
    assert MemoryStore.for_user(settings, user.id).entries("memory") == []


def test_a_replay_the_rules_now_refuse_reports_the_rule_and_stays_pending(db, settings, user):
    small = settings.model_copy(update={"memory_char_limit": 100})
    staged = memory_staged.stage(db, small, user.id, add("x" * 60))
    assert MemoryStore.for_user(small, user.id).write(add("y" * 60)).ok  # the store filled up meanwhile

    row, result = memory_staged.decide(db, small, user.id, staged.id, approve=True)
    assert result.code == "memory_over_limit" and row.status == "pending"
    assert memory_staged.list_pending(db, user.id)[0].id == staged.id


def test_another_users_staged_write_does_not_exist_for_you(db, settings, user):
    other = make_user(db)
    staged = memory_staged.stage(db, settings, other.id, add("theirs"))
    assert memory_staged.list_pending(db, user.id) == []
    with pytest.raises(NotFound):
        memory_staged.decide(db, settings, user.id, staged.id, approve=True)
    assert MemoryStore.for_user(settings, other.id).entries("memory") == []


def test_expire_staged_retires_writes_older_than_their_time(db, settings, user):
    fresh = memory_staged.stage(db, settings, user.id, add("fresh"))
    later = utcnow() + timedelta(seconds=settings.memory_staged_ttl_seconds + 1)

    assert memory_staged.expire_staged(db, utcnow()) == 0
    assert memory_staged.expire_staged(db, later) >= 1
    assert memory_staged.list_pending(db, user.id) == []
    with pytest.raises(InvalidState) as refused:
        memory_staged.decide(db, settings, user.id, fresh.id, approve=True)
    assert "expired" in refused.value.message
    assert MemoryStore.for_user(settings, user.id).entries("memory") == []


def test_a_write_past_its_time_cannot_be_approved_before_the_sweep(db, settings, user):
    short = settings.model_copy(update={"memory_staged_ttl_seconds": 1})
    staged = memory_staged.stage(db, short, user.id, add("too late"))
    with db.write() as s:  # move its deadline into the past instead of waiting for it
        row = s.get(type(staged), staged.id)
        row.expires_at = utcnow() - timedelta(seconds=1)
    assert memory_staged.list_pending(db, user.id) == []
    with pytest.raises(InvalidState):
        memory_staged.decide(db, short, user.id, staged.id, approve=True)
