"""The caller's scheduled jobs: create, list, read, change (pause and resume by status), remove, run now, and
each job's runs with their real outcome. Another user's job answers 404."""

from __future__ import annotations

from fastapi import APIRouter, Query, Response

from shared.queue.turns import send_turn
from services.api.deps import CurrentUser, DbDep, EnqueueDep, SettingsDep
from services.api.schemas import error_responses
from shared import clock
from shared.models.cron import JobCreate, JobPublic, JobUpdate, RunPublic
from shared.stores import cron_jobs, cron_runs

router = APIRouter(prefix="/v1/cron/jobs", tags=["cron"], responses=error_responses(401, 422))


def _public(job) -> JobPublic:
    return JobPublic.model_validate(job, from_attributes=True)


@router.get("", response_model=list[JobPublic])
def list_jobs(db: DbDep, user: CurrentUser) -> list[JobPublic]:
    """The caller's jobs, oldest first, with next run and last status."""
    return [_public(j) for j in cron_jobs.list_jobs(db, user.id)]


@router.post("", status_code=201, response_model=JobPublic)
def create_job(body: JobCreate, db: DbDep, user: CurrentUser) -> JobPublic:
    """A new job; over HTTP `deliver` "origin" has no chat to name, so it is stored only."""
    return _public(cron_jobs.create(db, user.id, body))


@router.get("/{job_id}", response_model=JobPublic, responses=error_responses(404))
def get_job(job_id: str, db: DbDep, user: CurrentUser) -> JobPublic:
    return _public(cron_jobs.get(db, user.id, job_id))


@router.patch("/{job_id}", response_model=JobPublic, responses=error_responses(404))
def update_job(job_id: str, body: JobUpdate, db: DbDep, user: CurrentUser) -> JobPublic:
    """Change fields; `status` "paused" or "active" pauses or resumes (the next run counted from now)."""
    return _public(cron_jobs.update(db, user.id, job_id, body))


@router.delete("/{job_id}", status_code=204, responses=error_responses(404))
def delete_job(job_id: str, db: DbDep, user: CurrentUser) -> Response:
    cron_jobs.remove(db, user.id, job_id)
    return Response(status_code=204)


@router.post("/{job_id}/run", status_code=202, response_model=RunPublic, responses=error_responses(404))
def run_job(job_id: str, db: DbDep, settings: SettingsDep, enqueue: EnqueueDep, user: CurrentUser) -> RunPublic:
    """Run the job once now (its schedule unchanged); the run's outcome shows in its runs."""
    claimed = cron_runs.run_now(db, user.id, job_id, clock.utcnow(), max_running=settings.max_running_turns_per_user)
    for turn in claimed.send:
        send_turn(enqueue, turn.id, turn.session_id)
    return RunPublic.model_validate(claimed.started[0], from_attributes=True)


@router.get("/{job_id}/runs", response_model=list[RunPublic], responses=error_responses(404))
def job_runs(job_id: str, db: DbDep, user: CurrentUser, limit: int = Query(50, ge=1, le=500)) -> list[RunPublic]:
    """The job's runs, newest first."""
    cron_jobs.get(db, user.id, job_id)
    return [RunPublic.model_validate(r, from_attributes=True) for r in cron_runs.list_runs(db, user.id, job_id, limit)]
