"""The operator's view of the stack (`hstack status`); admin key only."""

from __future__ import annotations

from fastapi import APIRouter

from services.api.deps import AdminKey, DbDep, RedisDep, SettingsDep
from services.api.schemas import AdminStatus, RecentTurn, error_responses
from services.api.stack_status import turn_counts
from shared.queue.app import queue_depths
from shared import heartbeats
from shared.models.users import ApiKeyPublic
from shared.stores import turns, users

RECENT_TURNS = 10

router = APIRouter(prefix="/v1/admin", tags=["admin"], responses=error_responses(401, 403))


@router.get("/status", response_model=AdminStatus)
def stack_status(db: DbDep, r: RedisDep, settings: SettingsDep, _admin: AdminKey) -> AdminStatus:
    """Live services, queue depths, turns by status and the latest turns."""
    recent = [RecentTurn.model_validate(t, from_attributes=True) for t in turns.recent_turns(db, limit=RECENT_TURNS)]
    return AdminStatus(
        services=heartbeats.alive(r),
        queues=queue_depths(r, settings),
        turns=turn_counts(db),
        recent_turns=recent,
    )


@router.get("/keys/{key_id}", response_model=ApiKeyPublic, responses=error_responses(404))
def find_key(key_id: str, db: DbDep, _admin: AdminKey) -> ApiKeyPublic:
    """Any user's key by its id, with its owner (what `hstack keys revoke KEY_ID` needs); never the key itself."""
    return ApiKeyPublic.model_validate(users.get_key(db, key_id), from_attributes=True)
