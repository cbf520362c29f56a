"""Turns: accept one (202, queued; or 200 streaming its events when asked with `Accept: text/event-stream`),
read it, cancel it."""

from __future__ import annotations

import logging
from typing import Annotated

import redis
from fastapi import APIRouter, Header, Request, Response
from starlette.concurrency import run_in_threadpool

from services.api.accept import accept_turn, request_hash
from services.api.deps import (Credentials, CurrentUser, DbDep, EnqueueDep, RecentTurnsDep, RedisDep, SettingsDep,
                               stream_owner)
from services.api.headers import IdempotencyKey, wants_event_stream
from services.api.routes.events import SSE_DOC, stream_turn, take_slot
from services.api.streams import parse_event_id
from services.api.schemas import error_responses
from shared.messaging import cancels, delegate_events, events
from shared.models.turns import TurnCreate, TurnPublic, TurnStatus
from shared.stores import delegations, turns

log = logging.getLogger(__name__)

router = APIRouter(tags=["turns"], responses=error_responses(401, 404))


@router.post(
    "/v1/sessions/{session_id}/turns",
    status_code=202,
    response_model=TurnPublic,
    responses={200: {**SSE_DOC, "description": "With `Accept: text/event-stream`: the accepted turn's events, "
                     "exactly as GET /v1/turns/{id}/events streams them; `Location` and `X-Turn-Id` name the turn. "
                     + SSE_DOC["description"]},
               **error_responses(409, 413, 422, 429)},
)
async def create_turn(
    session_id: str,
    body: TurnCreate,
    request: Request,
    response: Response,
    db: DbDep,
    settings: SettingsDep,
    enqueue: EnqueueDep,
    recent: RecentTurnsDep,
    user: CurrentUser,
    credentials: Credentials,
    idempotency_key: IdempotencyKey,
    last_event_id: Annotated[str | None, Header(max_length=64)] = None,
):
    """Queue a turn; the same Idempotency-Key and body return the same turn, a different body is 409.

    With `Accept: text/event-stream` the same response then streams the turn's events (persist first, enqueue,
    then follow its Redis stream as GET .../events does), saving the client a second request and its latency.
    The stream slot is taken before the turn is accepted, so a 429 too_many_streams means nothing was queued.
    A retry with the same Idempotency-Key (and Last-Event-ID) resumes the same turn's stream.

    Async, with only the accept in the threadpool: a sync route with a response model takes a second
    threadpool hop just to validate what it returns.
    """
    streaming = wants_event_stream(request.headers.get("accept"))  # read as is: no Accept is ever refused
    after = parse_event_id(last_event_id) if streaming and last_event_id else None
    slot = take_slot(request, stream_owner(settings, credentials.credentials, user.id)) if streaming else None
    if isinstance(slot, Response):  # 429 too_many_streams
        return slot
    digest = request_hash(body.model_dump(), session_id) if idempotency_key else None
    try:
        turn = await run_in_threadpool(
            accept_turn,
            db,
            enqueue,
            settings,
            user_id=user.id,
            session_id=session_id,
            text=body.input,
            attachment_ids=body.attachments,
            idempotency_key=idempotency_key,
            body_hash=digest,
        )
    except BaseException:
        if slot is not None:
            slot.release()
        raise
    recent.add(turn)
    location = f"/v1/turns/{turn.id}"
    if slot is not None:
        return stream_turn(request, db, user, turn, slot, after, headers={"Location": location, "X-Turn-Id": turn.id})
    response.headers["Location"] = location
    return TurnPublic.of(turn)


@router.get("/v1/turns/{turn_id}", response_model=TurnPublic)
async def read_turn(turn_id: str, db: DbDep, user: CurrentUser) -> TurnPublic:
    """A turn's status, output, error and usage."""
    return TurnPublic.of(await run_in_threadpool(turns.get_turn, db, user.id, turn_id))


@router.post("/v1/turns/{turn_id}/cancel", status_code=202, response_model=TurnPublic, responses=error_responses(409))
def cancel_turn(turn_id: str, db: DbDep, r: RedisDep, settings: SettingsDep, user: CurrentUser) -> TurnPublic:
    """Cancel a queued turn now or ask its worker to stop a running one; 409 turn_finished once it ended."""
    turn = turns.request_cancel(db, user.id, turn_id)
    if turn.status == TurnStatus.cancelled.value:
        _stop_children(db, r, settings, turn.id)
        _announce_cancelled(r, turn.id, settings.event_stream_ttl_seconds)
    else:
        cancels.announce(r, settings, turn.id)
    return TurnPublic.of(turn)


def _stop_children(db, r: redis.Redis, settings, turn_id: str) -> None:
    """The children a parked parent waited for stopped with it: its stream says so, their workers hear it now."""
    for row in delegations.stopped_with_parent(db, turn_id):
        delegate_events.publish(r, row)
    for child_id in delegations.children_running(db, turn_id):
        cancels.announce(r, settings, child_id)


def _announce_cancelled(r: redis.Redis, turn_id: str, ttl_seconds: int) -> None:
    """No worker will touch a turn cancelled while queued, so its subscribers hear the end from here."""
    try:
        events.publish(r, turn_id, "turn.cancelled", {}, ttl_seconds=ttl_seconds)
    except redis.RedisError as exc:
        log.warning("could not publish turn.cancelled for %s (%s)", turn_id, type(exc).__name__)
