"""The curator's housekeeping: staged memory writes past their time are expired, and turn event streams
left without a TTL (their worker died before the last event) get one, or go when it is already over."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlmodel import select

from services.curator import expiry
from services.curator.tasks import sweep_expired
from shared import clock
from shared.messaging.events import stream_key
from shared.models.memory import MemoryStagedWrite
from shared.stores import memory_staged, turns
from shared.stores.memory import MemoryRequest
from tests.support.factories import make_session

TTL = 3600


@pytest.fixture
def cursor_key(redis_client):
    key = f"test-cursor-{uuid.uuid4().hex[:8]}"
    yield key
    redis_client.delete(key)


def sweep_all(db, r, cursor_key: str) -> tuple[int, int]:
    """Sweep until the scan went round once; (given a TTL, deleted)."""
    expiring = deleted = 0
    for _ in range(10_000):
        result = expiry.trim_streams(db, r, ttl_seconds=TTL, scan_limit=1000, cursor_key=cursor_key)
        expiring, deleted = expiring + result.expiring, deleted + result.deleted
        if result.done:
            return expiring, deleted
    raise AssertionError("the stream scan never finished")


def test_streams_without_a_ttl_get_the_rest_of_it_when_their_turn_is_over(db, redis_client, user, cursor_key):
    session = make_session(db, user.id)
    finished_long_ago, _ = turns.create_turn(db, user.id, session.id, "one")
    finished_just_now, _ = turns.create_turn(db, user.id, session.id, "two")
    still_queued, _ = turns.create_turn(db, user.id, make_session(db, user.id).id, "three")
    for turn in (finished_long_ago, finished_just_now):
        turns.request_cancel(db, user.id, turn.id)
    gone = f"trn_gone{uuid.uuid4().hex[:12]}"
    with_ttl = f"trn_ttl{uuid.uuid4().hex[:12]}"
    r = redis_client
    r.xadd(stream_key(finished_long_ago.id), {"type": "turn.started"}, id="1000-1")  # 1970: long past its TTL
    r.xadd(stream_key(gone), {"type": "turn.started"}, id="1000-1")
    r.xadd(stream_key(finished_just_now.id), {"type": "turn.started"})
    r.xadd(stream_key(still_queued.id), {"type": "turn.started"}, id="1000-1")
    r.xadd(stream_key(with_ttl), {"type": "turn.completed"}, id="1000-1")
    r.expire(stream_key(with_ttl), 50)

    sweep_all(db, r, cursor_key)

    assert not r.exists(stream_key(finished_long_ago.id)) and not r.exists(stream_key(gone))
    assert TTL - 60 <= r.ttl(stream_key(finished_just_now.id)) <= TTL
    assert r.ttl(stream_key(still_queued.id)) == -1, "a turn not yet finished keeps its stream"
    assert 0 < r.ttl(stream_key(with_ttl)) <= 50
    r.delete(stream_key(still_queued.id), stream_key(finished_just_now.id), stream_key(with_ttl))


def test_one_sweep_examines_a_bounded_number_of_keys_and_the_next_continues(db, redis_client, cursor_key):
    keys = [stream_key(f"trn_many{uuid.uuid4().hex[:12]}") for _ in range(1200)]
    pipe = redis_client.pipeline(transaction=False)
    for key in keys:
        pipe.xadd(key, {"type": "turn.started"}, id="1000-1")
    pipe.execute()

    first = expiry.trim_streams(db, redis_client, ttl_seconds=TTL, scan_limit=500, cursor_key=cursor_key)
    assert not first.done and first.examined < len(keys)
    sweep_all(db, redis_client, cursor_key)
    assert sum(redis_client.exists(k) for k in keys) == 0


def test_the_expiry_task_expires_staged_memory_writes_past_their_time(db, settings, user):
    request = MemoryRequest.from_args({"target": "user", "action": "add", "content": "Prefers tea"})
    staged = memory_staged.stage(db, settings, user.id, request)

    with clock.travel(timedelta(seconds=settings.memory_staged_ttl_seconds + 60)):
        result = sweep_expired()

    assert result["staged_expired"] >= 1
    with db.read() as s:
        row = s.exec(select(MemoryStagedWrite).where(MemoryStagedWrite.id == staged.id)).one()
    assert row.status == "expired" and memory_staged.list_pending(db, user.id) == []
