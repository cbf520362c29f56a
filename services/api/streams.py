"""Following a turn's Redis event stream from the api, with SSE framing."""

from __future__ import annotations

import asyncio
import json
import re
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, TypeVar

import redis.asyncio as aioredis
from starlette.concurrency import run_in_threadpool

from shared import events
from shared.db import Database
from shared.models.turns import TERMINAL_STATUSES, Turn, TurnStatus
from shared.stores import turns

BATCH = 200
SYNTHETIC_ID = "0-1"
KEEPALIVE = ": keepalive\n\n"
STREAM_ID = re.compile(r"^\d{1,20}(-\d{1,20})?$")

TurnLoader = Callable[[], Awaitable[Turn]]
T = TypeVar("T")


@dataclass(frozen=True)
class Event:
    id: str
    type: str
    data: dict[str, Any]

    @property
    def terminal(self) -> bool:
        return self.type in events.TERMINAL_EVENTS

    def sse(self) -> str:
        """One SSE frame: id, event type and JSON data."""
        return f"id: {self.id}\nevent: {self.type}\ndata: {json.dumps(self.data, ensure_ascii=False)}\n\n"


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


def _finished(turn: Turn) -> bool:
    return turn.status in {s.value for s in TERMINAL_STATUSES}


async def follow(
    r: aioredis.Redis, turn_id: str, load_turn: TurnLoader, *, idle_seconds: float, after: str | None = None
) -> AsyncIterator[Event | None]:
    """The turn's events after `after` (from the start when None); None after each idle `idle_seconds`
    (time for a keepalive); ends on a terminal event.

    A turn that is finished in the database but whose stream holds no terminal event (expired, or the
    worker died before publishing) ends with a terminal event rebuilt from the row.
    """
    key = events.stream_key(turn_id)
    last = after or "0-0"
    block_ms = max(1, int(idle_seconds * 1000))
    if not await r.exists(key):
        turn = await load_turn()
        if _finished(turn):
            yield terminal_from_row(turn)
            return
    while True:
        reply = await r.xread({key: last}, count=BATCH, block=block_ms)
        if not reply:
            turn = await load_turn()
            if _finished(turn):
                yield terminal_from_row(turn)
                return
            yield None
            continue
        for entry_id, fields in reply[0][1]:
            event = Event(*events.decode(entry_id, fields))
            last = entry_id
            yield event
            if event.terminal:
                return


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
