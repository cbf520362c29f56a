"""Console page for scheduled jobs: each job's schedule, next run, last status and its latest runs' output,
with pause, resume, run now and remove. The same store calls as /v1/cron/jobs; another user's job is 404."""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import ValidationError

from shared.queue.turns import send_turn
from services.api.console.actions import attempt, invalid, parsed
from services.api.console.deps import ConsoleForm, ConsoleUser, redirect
from services.api.console.render import render
from shared import clock
from shared.errors import NotFound
from shared.models.cron import JobCreate, JobUpdate
from shared.stores import cron_jobs, cron_runs

router = APIRouter(include_in_schema=False)

RUNS_SHOWN = 5


@router.get("/cron")
def cron_page(request: Request, user: ConsoleUser):
    db = request.app.state.db
    jobs = [(job, cron_runs.list_runs(db, user.id, job.id, RUNS_SHOWN)) for job in cron_jobs.list_jobs(db, user.id)]
    return render(request, "cron.html", active="cron", jobs=jobs)


@router.post("/cron/jobs")
def create_job(request: Request, user: ConsoleUser, form: ConsoleForm):
    try:
        body = parsed(JobCreate, form)
    except ValidationError as exc:
        return redirect(request, "/cron", f"Not accepted: {invalid(exc)}", "alert")
    return attempt(request, "/cron", lambda: cron_jobs.create(request.app.state.db, user.id, body), "Scheduled.")


@router.post("/cron/jobs/{job_id}/{action}")
def act(request: Request, job_id: str, action: str, user: ConsoleUser, form: ConsoleForm):
    """pause, resume, run (once now) or remove a job of the caller."""
    state = request.app.state
    actions = {
        "pause": lambda: cron_jobs.update(state.db, user.id, job_id, JobUpdate(status="paused")),
        "resume": lambda: cron_jobs.update(state.db, user.id, job_id, JobUpdate(status="active")),
        "remove": lambda: cron_jobs.remove(state.db, user.id, job_id),
        "run": lambda: _run_now(state, user.id, job_id),
    }
    if action not in actions:
        raise NotFound("No such action.")
    return attempt(request, "/cron", actions[action], f"{action.capitalize()}: done.")


def _run_now(state, user_id: str, job_id: str) -> None:
    claimed = cron_runs.run_now(state.db, user_id, job_id, clock.utcnow(),
                                max_running=state.settings.max_running_turns_per_user)
    for turn in claimed.send:
        send_turn(state.enqueue, turn.id, turn.session_id)
