"""The operator's view of the stack (`hstack status`); admin key only."""

from __future__ import annotations

from fastapi import APIRouter

from services.api.deps import AdminKey, DbDep, RedisDep, SettingsDep
from services.api.schemas import AdminStatus, RecentTurn, error_responses
from services.api.stack_status import turn_counts
from shared.queue.app import queue_depths
from shared import heartbeats
from shared.stores import turns

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
