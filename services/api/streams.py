"""Following a turn's events for a client: replay from Redis, then the live fan-out, with SSE framing."""

from __future__ import annotations

import asyncio
import logging
import re
from contextlib import aclosing
from typing import AsyncIterator, Awaitable, Callable, TypeVar

import redis
from sqlalchemy.exc import OperationalError
from starlette.concurrency import run_in_threadpool

from services.api.fanout import BROKEN, Event, Hub, StreamEnd, Subscriber, id_key
from shared.db import Database
from shared.errors import InvalidInput
from shared.models.turns import TERMINAL_STATUSES, Turn, TurnStatus
from shared.stores import turns

__all__ = ["Event", "StreamEnd", "follow", "follow_or_poll", "parse_event_id", "terminal_from_row", "turn_loader", "within"]

log = logging.getLogger(__name__)

SYNTHETIC_ID = "0-1"
POLL_SECONDS = 0.5
KEEPALIVE = ": keepalive\n\n"
STREAM_ID = re.compile(r"^(\d{1,20})(?:-(\d{1,20}))?$")
MAX_ID_PART = 2**64 - 1

TurnLoader = Callable[[], Awaitable[Turn]]
T = TypeVar("T")


def parse_event_id(value: str) -> str:
    """A client's Last-Event-ID as a full Redis stream id; 422 when it is not one Redis could hold."""
    match = STREAM_ID.match(value)
    if not match:
        raise InvalidInput("last_event_id: not an event id like 1718000000000-0.", code="invalid_last_event_id")
    ms, seq = int(match.group(1)), int(match.group(2) or 0)
    if ms > MAX_ID_PART or seq > MAX_ID_PART:
        raise InvalidInput("last_event_id: each part of an event id is at most 18446744073709551615.",
                           code="invalid_last_event_id")
    return f"{ms}-{seq}"


def turn_loader(db: Database, user_id: str, turn_id: str) -> TurnLoader:
    """Reads the turn's row off the event loop, for `follow`."""

    async def load() -> Turn:
        return await run_in_threadpool(turns.get_turn, db, user_id, turn_id)

    return load


def terminal_from_row(turn: Turn) -> Event:
    """The terminal event a finished turn would have published, rebuilt from its row."""
    if turn.status == TurnStatus.completed.value:
        return Event(SYNTHETIC_ID, "turn.completed", {"output": turn.output, "usage": turn.usage or {}})
    if turn.status == TurnStatus.failed.value:
        error = {"code": turn.error_code or "internal_error", "message": turn.error_message or ""}
        return Event(SYNTHETIC_ID, "turn.failed", {"error": error})
    return Event(SYNTHETIC_ID, "turn.cancelled", {})


def finished(turn: Turn) -> bool:
    return turn.status in {s.value for s in TERMINAL_STATUSES}


def error_event(last: str, end: StreamEnd) -> Event:
    """The explicit last frame of a stream that stops early; its id is where to resume."""
    return Event(last, "error", {"code": end.code, "message": end.message})


async def follow(
    hub: Hub, turn_id: str, load_turn: TurnLoader, *, idle_seconds: float, after: str | None = None,
    known: Turn | None = None,
) -> AsyncIterator[Event | None]:
    """The turn's events after `after` (from the start when None); None after each idle `idle_seconds`
    (time for a keepalive); ends on a terminal event, or on an `error` event naming where to resume.

    What is stored after `after` is read first (one XREAD when the stream is new or short; a turn's stream
    is capped, so the backlog is bounded) and the fan-out joined from the newest of it, so nothing is
    missed between the two. A turn that is finished in the database but has nothing stored after `after`
    (its stream expired, or the worker died before publishing its end) ends with a terminal event rebuilt
    from the row. `known`: the row the caller read just before, used for that check instead of reading it
    again (a turn that finishes after that read publishes its end, and one whose worker died is caught
    when the stream stays idle).
    """
    last = after or "0-0"
    try:
        backlog = await hub.history(turn_id, last)
        if not backlog:
            turn = known if known is not None else await load_turn()
            if finished(turn):
                yield terminal_from_row(turn)
                return
    except (redis.RedisError, OSError):
        yield error_event(last, BROKEN)
        return
    ended = next((n for n, event in enumerate(backlog) if event.terminal), None)
    if ended is not None:
        for event in backlog[:ended + 1]:
            yield event
        return
    sub: Subscriber | None = None
    try:
        sub, gap = await hub.join(turn_id, backlog[-1].id if backlog else last)
        for event in backlog + gap:
            yield event
            last = event.id
            if event.terminal:
                return
        async for event in _live(hub, sub, turn_id, load_turn, last, idle_seconds):
            if event is not None and event.type != "error":
                last = event.id
            yield event
    except (redis.RedisError, OSError):
        yield error_event(last, BROKEN)
    finally:
        if sub is not None:
            hub.unsubscribe(turn_id, sub)


async def _live(hub: Hub, sub: Subscriber, turn_id: str, load_turn: TurnLoader, last: str,
                idle_seconds: float) -> AsyncIterator[Event | None]:
    """The fan-out after `last`, skipping anything already sent; a finished turn's end read from storage."""
    while True:
        item = await sub.next(idle_seconds)
        if isinstance(item, StreamEnd):
            yield error_event(last, item)
            return
        if item is None:
            turn = await load_turn()
            if not finished(turn):
                yield None
                continue
            for event in await hub.history(turn_id, last):
                yield event
                if event.terminal:
                    return
            yield terminal_from_row(turn)
            return
        if id_key(item.id) <= id_key(last):
            continue
        yield item
        last = item.id
        if item.terminal:
            return


async def follow_or_poll(
    hub: Hub, turn_id: str, load_turn: TurnLoader, *, idle_seconds: float, poll_seconds: float = POLL_SECONDS
) -> AsyncIterator[Event | None]:
    """`follow`, but when the event stream cannot be read, poll the turn's row (the source of truth)
    until it finishes, so a waiter never gives up on accepted work because Redis is in trouble."""
    async for event in follow(hub, turn_id, load_turn, idle_seconds=idle_seconds):
        if event is not None and event.type == "error":
            log.warning("events of turn %s unreadable (%s); polling its row", turn_id, event.data.get("code"))
            break
        yield event
        if event is not None and event.terminal:
            return
    loop = asyncio.get_running_loop()
    quiet_since = loop.time()
    while True:
        try:
            turn = await load_turn()
        except OperationalError as exc:  # the database blinked: keep waiting, bounded by the caller
            log.warning("could not read turn %s (%s); retrying", turn_id, type(exc).__name__)
        else:
            if finished(turn):
                yield terminal_from_row(turn)
                return
        if loop.time() - quiet_since >= idle_seconds:
            quiet_since = loop.time()
            yield None
        await asyncio.sleep(poll_seconds)


async def within(stream: AsyncIterator[T], seconds: float) -> AsyncIterator[T]:
    """Pass items through until `seconds` have passed, then raise TimeoutError (never across a yield)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    async with aclosing(stream):
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError
            try:
                item = await asyncio.wait_for(anext(stream), remaining)
            except StopAsyncIteration:
                return
            yield item
