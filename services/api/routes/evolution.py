"""Skill evolution runs of the calling user: start one, follow it, cancel it, roll its applied proposal back.

Starting commits the run row and enqueues its id on the reviewer's queue; the proposal a run makes is a
staged skill write, approved or denied at /v1/skills/pending/{id} (or in the console) like any other.
Another user's run answers 404.
"""

from __future__ import annotations

from fastapi import APIRouter, Query

from services.api.deps import CurrentUser, DbDep, EnqueueDep, SettingsDep
from services.api.schemas import error_responses
from shared.models.evolution import EvolutionRunList, EvolutionRunPublic, EvolutionStart
from shared.queue.names import EVOLVE_SKILL
from shared.queue.payloads import EvolveSkill
from shared.stores import evolution_runs

router = APIRouter(prefix="/v1/evolution", tags=["evolution"], responses=error_responses(401, 422))


def _one(db, run) -> EvolutionRunPublic:
    return evolution_runs.public(db, [run])[0]


@router.post("/runs", status_code=202, response_model=EvolutionRunPublic, responses=error_responses(404, 409, 429))
def start_run(body: EvolutionStart, db: DbDep, settings: SettingsDep, enqueue: EnqueueDep,
              user: CurrentUser) -> EvolutionRunPublic:
    """Queue a run for one of the caller's skills (202); 429 past the daily budget, 409 while one runs."""
    run = evolution_runs.start(db, settings, user.id, body.skill, body.budget)
    enqueue(EVOLVE_SKILL, EvolveSkill(run_id=run.id))
    return _one(db, run)


@router.get("/runs", response_model=EvolutionRunList)
def list_runs(db: DbDep, user: CurrentUser, limit: int = Query(20, ge=1, le=200)) -> EvolutionRunList:
    """The caller's runs, newest first, with progress, scores, cost and the proposal's fate."""
    return EvolutionRunList(data=evolution_runs.public(db, evolution_runs.list_runs(db, user.id, limit)))


@router.get("/runs/{run_id}", response_model=EvolutionRunPublic, responses=error_responses(404))
def get_run(run_id: str, db: DbDep, user: CurrentUser) -> EvolutionRunPublic:
    return _one(db, evolution_runs.get(db, user.id, run_id))


@router.post("/runs/{run_id}/cancel", response_model=EvolutionRunPublic, responses=error_responses(404, 409))
def cancel_run(run_id: str, db: DbDep, user: CurrentUser) -> EvolutionRunPublic:
    """Stop a queued or running run; nothing it found is staged. 409 once it ended."""
    return _one(db, evolution_runs.cancel(db, user.id, run_id))


@router.post("/runs/{run_id}/restore", response_model=EvolutionRunPublic, responses=error_responses(404, 409))
def restore_run(run_id: str, db: DbDep, settings: SettingsDep, user: CurrentUser) -> EvolutionRunPublic:
    """Put back the text an approved proposal replaced (the ledger's backup on the run row)."""
    return _one(db, evolution_runs.restore(db, settings, user.id, run_id))
