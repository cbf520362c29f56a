"""Turns: accept one (202, queued), read it, cancel it."""

from __future__ import annotations

import logging

import redis
from fastapi import APIRouter, Response
from starlette.concurrency import run_in_threadpool

from services.api.accept import accept_turn, request_hash
from services.api.deps import CurrentUser, DbDep, EnqueueDep, RecentTurnsDep, RedisDep, SettingsDep
from services.api.headers import IdempotencyKey
from services.api.schemas import error_responses
from shared.messaging import cancels, events
from shared.models.turns import TurnCreate, TurnPublic, TurnStatus
from shared.stores import turns

log = logging.getLogger(__name__)

router = APIRouter(tags=["turns"], responses=error_responses(401, 404))


@router.post(
    "/v1/sessions/{session_id}/turns",
    status_code=202,
    response_model=TurnPublic,
    responses=error_responses(409, 413, 422),
)
async def create_turn(
    session_id: str,
    body: TurnCreate,
    response: Response,
    db: DbDep,
    settings: SettingsDep,
    enqueue: EnqueueDep,
    recent: RecentTurnsDep,
    user: CurrentUser,
    idempotency_key: IdempotencyKey,
) -> TurnPublic:
    """Queue a turn; the same Idempotency-Key and body return the same turn, a different body is 409.

    Async, with only the accept in the threadpool: a sync route with a response model takes a second
    threadpool hop just to validate what it returns.
    """
    digest = request_hash(body.model_dump(), session_id) if idempotency_key else None
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
    recent.add(turn)
    response.headers["Location"] = f"/v1/turns/{turn.id}"
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
        _announce_cancelled(r, turn.id, settings.event_stream_ttl_seconds)
    else:
        cancels.announce(r, settings, turn.id)
    return TurnPublic.of(turn)


def _announce_cancelled(r: redis.Redis, turn_id: str, ttl_seconds: int) -> None:
    """No worker will touch a turn cancelled while queued, so its subscribers hear the end from here."""
    try:
        events.publish(r, turn_id, "turn.cancelled", {}, ttl_seconds=ttl_seconds)
    except redis.RedisError as exc:
        log.warning("could not publish turn.cancelled for %s (%s)", turn_id, type(exc).__name__)
