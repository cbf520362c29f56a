"""A turn's events as Server-Sent Events, replayable from the start and resumable by Last-Event-ID."""

from __future__ import annotations

import logging
from typing import Annotated, AsyncIterator

import redis
import redis.asyncio as aioredis
from fastapi import APIRouter, Header, Query
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from services.api.deps import AsyncRedisDep, CurrentUser, DbDep, SettingsDep
from services.api.schemas import error_responses
from services.api.streams import KEEPALIVE, STREAM_ID, TurnLoader, follow, turn_loader
from shared.errors import InvalidInput
from shared.stores import turns

log = logging.getLogger(__name__)

router = APIRouter(tags=["turns"])

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
SSE_DOC = {
    "description": "`id: <stream id>`, `event: <type>`, `data: <json>` frames; `: keepalive` after each idle SSE_KEEPALIVE_SECONDS (15 s).",
    "content": {"text/event-stream": {"schema": {"type": "string"}}},
}


@router.get(
    "/v1/turns/{turn_id}/events",
    response_class=StreamingResponse,
    responses={200: SSE_DOC, **error_responses(401, 404, 422)},
)
async def turn_events(
    turn_id: str,
    db: DbDep,
    r: AsyncRedisDep,
    settings: SettingsDep,
    user: CurrentUser,
    last_event_id: Annotated[str | None, Header(max_length=64)] = None,
    last_event_id_query: Annotated[str | None, Query(alias="last_event_id", max_length=64)] = None,
) -> StreamingResponse:
    """Replay the turn's events from the start (or after Last-Event-ID) and follow them to the terminal one."""
    await run_in_threadpool(turns.get_turn, db, user.id, turn_id)
    after = last_event_id or last_event_id_query
    if after is not None and not STREAM_ID.match(after):
        raise InvalidInput("last_event_id: not an event id like 1718000000000-0.")
    frames = _frames(r, turn_id, turn_loader(db, user.id, turn_id), after, settings.sse_keepalive_seconds)
    return StreamingResponse(frames, media_type="text/event-stream", headers=SSE_HEADERS)


async def _frames(
    r: aioredis.Redis, turn_id: str, load_turn: TurnLoader, after: str | None, keepalive: float
) -> AsyncIterator[str]:
    """SSE frames; a Redis failure mid-stream ends the response so the client resumes with Last-Event-ID."""
    try:
        async for event in follow(r, turn_id, load_turn, idle_seconds=keepalive, after=after):
            yield KEEPALIVE if event is None else event.sse()
    except redis.RedisError as exc:
        log.warning("event stream of turn %s broke off (%s)", turn_id, type(exc).__name__)
