"""The SSE fan-out itself: a slow subscriber is cut off with an explicit error, and only it."""

from __future__ import annotations

import asyncio

import redis

from services.api.fanout import BATCH, Hub
from services.api.streams import follow, turn_loader
from shared.messaging import events
from shared.messaging.connections import bounded_async_redis
from shared.stores import turns
from tests.support.factories import make_session

FLOOD = 3 * BATCH


def test_a_subscriber_that_falls_behind_is_ended_with_an_overflow_error_it_can_resume_from(
        settings, db, user, redis_client):
    """One reader fans a turn out to every subscriber, so a client that stops reading must not
    hold up the others nor grow memory without bound. A subscriber whose buffer overflows gets the events
    it buffered, then `event: error` (stream_overflow) whose id resumes exactly where it stopped; another
    subscriber that keeps reading sees every event to turn.completed."""
    turn = turns.create_turn(db, user.id, make_session(db, user.id).id, "flood")[0]
    load = turn_loader(db, user.id, turn.id)

    async def scenario():
        readers = [bounded_async_redis(settings, connections=1, read_timeout=20, name="test-fanout")]
        hub = Hub(readers, bounded_async_redis(settings, connections=2, read_timeout=5, name="test-fanout"),
                  buffer=BATCH)
        hub.start()
        try:
            slow = follow(hub, turn.id, load, idle_seconds=10)
            fast = follow(hub, turn.id, load, idle_seconds=10)
            started = await asyncio.to_thread(events.publish, redis_client, turn.id, "turn.started", {})
            assert (await anext(slow)).id == (await anext(fast)).id == started
            fast_task = asyncio.create_task(_drain(fast))
            await asyncio.to_thread(_flood, redis_client, turn.id)
            fast_events = await fast_task
            slow_events = await _drain(slow)
            resumed = await _drain(follow(hub, turn.id, load, idle_seconds=10, after=slow_events[-1].id))
        finally:
            await hub.close()
        return fast_events, slow_events, resumed

    fast_events, slow_events, resumed = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert len(fast_events) == FLOOD + 1 and fast_events[-1].type == "turn.completed"
    assert slow_events[-1].type == "error" and slow_events[-1].data["code"] == "stream_overflow"
    delivered = slow_events[:-1]
    assert len(delivered) == BATCH and slow_events[-1].id == delivered[-1].id
    assert [e.id for e in delivered + resumed] == [e.id for e in fast_events]


async def _drain(stream) -> list:
    return [event async for event in stream if event is not None]


def _flood(redis_client, turn_id: str) -> None:
    for n in range(FLOOD):
        events.publish(redis_client, turn_id, "message.delta", {"delta": str(n)})
    events.publish(redis_client, turn_id, "turn.completed", {"output": "", "usage": {}}, ttl_seconds=60)


def test_close_returns_when_a_cancelled_read_comes_back_as_a_connection_error(settings, db, user):
    """redis-py can turn a cancelled XREAD into a ConnectionError; the reader took that for a failed read, went
    on, then waited for work forever, so Hub.close() (the api's shutdown) never returned: seen under load."""
    turn = turns.create_turn(db, user.id, make_session(db, user.id).id, "close")[0]
    load = turn_loader(db, user.id, turn.id)

    reading = asyncio.Event()

    async def read_until_cancelled(*_args, **_kwargs):
        reading.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise redis.ConnectionError("Connection closed by server.") from None

    async def scenario():
        hub = Hub([bounded_async_redis(settings, connections=1, read_timeout=20, name="test-fanout")],
                  bounded_async_redis(settings, connections=2, read_timeout=5, name="test-fanout"), buffer=BATCH)
        hub.readers[0].client.xread = read_until_cancelled
        hub.start()
        stream = follow(hub, turn.id, load, idle_seconds=10)
        waiting = asyncio.create_task(anext(stream))
        await reading.wait()  # the reader is inside its XREAD
        await hub.close()
        return await waiting

    ended = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert ended.type == "error" and ended.data["code"] == "shutting_down"
