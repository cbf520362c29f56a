"""A turn's events as Server-Sent Events, replayable from the start and resumable by Last-Event-ID."""

from __future__ import annotations

import logging
from typing import Annotated, AsyncIterator

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from services.api.deps import Credentials, CurrentUser, DbDep, SettingsDep, stream_owner
from services.api.errors import error_response
from services.api.fanout import Hub
from services.api.schemas import error_responses
from services.api.stream_slots import Slot, SlotStreamingResponse, StreamSlots
from services.api.streams import KEEPALIVE, TurnLoader, follow, parse_event_id, turn_loader
from shared.db import Database
from shared.models.turns import Turn
from shared.models.users import User
from shared.stores import turns

log = logging.getLogger(__name__)

router = APIRouter(tags=["turns"])

RETRY_AFTER_SECONDS = 5
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
SSE_DOC = {
    "description": "`id: <stream id>`, `event: <type>`, `data: <json>` frames; `: keepalive` after each idle "
    "SSE_KEEPALIVE_SECONDS (15 s). A stream ends with its terminal event, or with `event: error` "
    '(`{"code", "message"}`, its id the Last-Event-ID to resume from).',
    "content": {"text/event-stream": {"schema": {"type": "string"}}},
}


@router.get(
    "/v1/turns/{turn_id}/events",
    response_class=StreamingResponse,
    responses={200: SSE_DOC, **error_responses(401, 404, 422, 429)},
)
async def turn_events(
    turn_id: str,
    request: Request,
    db: DbDep,
    settings: SettingsDep,
    user: CurrentUser,
    credentials: Credentials,
    last_event_id: Annotated[str | None, Header(max_length=64)] = None,
    last_event_id_query: Annotated[str | None, Query(alias="last_event_id", max_length=64)] = None,
) -> Response:
    """Replay the turn's events from the start (or after Last-Event-ID) and follow them to the terminal one;
    429 too_many_streams when this key already holds SSE_MAX_STREAMS_PER_KEY open streams."""
    return await open_event_stream(request, db, user, stream_owner(settings, credentials.credentials, user.id),
                                   turn_id, last_event_id or last_event_id_query)


async def open_event_stream(request: Request, db: Database, user: User, slot_owner: str,
                            turn_id: str, after: str | None) -> Response:
    """The one SSE stream of a turn (the API's route and the console's): the owner's turn or 404, one of the
    key's stream slots (`slot_owner`, see stream_owner) or 429, then every event after `after` (a Last-Event-ID)
    to the terminal one."""
    after = parse_event_id(after) if after is not None else None
    turn = request.app.state.recent_turns.get(turn_id, user.id)  # just accepted here: no need to read it
    if turn is None:
        turn = await run_in_threadpool(turns.get_turn, db, user.id, turn_id)
    slot = take_slot(request, slot_owner)
    if not isinstance(slot, Slot):
        return slot
    return stream_turn(request, db, user, turn, slot, after)


def take_slot(request: Request, slot_owner: str) -> Slot | Response:
    """One of the key's stream slots, or the 429 too_many_streams answer to send instead."""
    slots: StreamSlots = request.app.state.stream_slots
    slot = slots.acquire(slot_owner)
    if slot is None:
        message = f"This API key already has {slots.cap} open event streams; close one or retry later."
        return error_response(request.url.path, 429, "too_many_streams", message,
                              headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
    return slot


def stream_turn(request: Request, db: Database, user: User, turn: Turn, slot: Slot, after: str | None,
                *, status_code: int = 200, headers: dict[str, str] | None = None) -> Response:
    """The SSE response of `turn` (already checked to be the user's) after `after`, holding `slot` until it ends."""
    keepalive = request.app.state.settings.sse_keepalive_seconds
    frames = _frames(request.app.state.hub, turn.id, turn_loader(db, user.id, turn.id), after, keepalive, turn)
    return SlotStreamingResponse(frames, slot=slot, status_code=status_code, media_type="text/event-stream",
                                 headers={**SSE_HEADERS, **(headers or {})})


async def _frames(hub: Hub, turn_id: str, load_turn: TurnLoader, after: str | None, keepalive: float,
                  known: Turn | None = None) -> AsyncIterator[str]:
    """SSE frames until the terminal event or an explicit `error` event."""
    async for event in follow(hub, turn_id, load_turn, idle_seconds=keepalive, after=after, known=known):
        if event is not None and event.type == "error":
            log.warning("event stream of turn %s ended early (%s)", turn_id, event.data.get("code"))
        yield KEEPALIVE if event is None else event.sse()
