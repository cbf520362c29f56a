"""The curator's ledger for the calling user: what each pass changed, and rolling one change back.

A user's key sees that user's runs only; another user's skill is answered like a missing one (404).
"""

from __future__ import annotations

from datetime import timedelta

from fastapi import APIRouter, Query

from services.api.deps import CurrentUser, DbDep, SettingsDep
from services.api.schemas import error_responses
from shared import clock
from shared.models.curator import RunList, RunPublic
from shared.stores import curator
from shared.stores.curator_moves import restore
from shared.stores.skills import SkillStore

router = APIRouter(prefix="/v1/curator", tags=["curator"], responses=error_responses(401, 422))


@router.get("/runs", response_model=RunList)
def list_runs(db: DbDep, settings: SettingsDep, user: CurrentUser,
              limit: int = Query(20, ge=1, le=200)) -> RunList:
    """The caller's curation passes and restores, newest first, each with its skill transitions."""
    interval = timedelta(hours=settings.curator_interval_hours)
    return RunList(data=curator.runs(db, user.id, limit), state=curator.public_state(db, user.id, interval))


@router.post("/skills/{name}/restore", response_model=RunPublic, responses=error_responses(404, 409))
def restore_skill(name: str, db: DbDep, settings: SettingsDep, user: CurrentUser) -> RunPublic:
    """Undo the curator's last change to a skill (stale or archived → active); recorded as a restore run."""
    return restore(SkillStore.for_user(db, settings, user.id), name, clock.utcnow())
