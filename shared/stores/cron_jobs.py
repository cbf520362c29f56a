"""Scheduled jobs of a user: created with their own session, read, changed, paused, resumed and removed.
Another user's job is NotFound, like every other object."""

from __future__ import annotations

from typing import Any

from sqlmodel import delete, select

from shared.clock import utcnow
from shared.cron import schedule as schedules
from shared.db import Database
from shared.errors import InvalidInput, NotFound
from shared.ids import new_id
from shared.models.cron import CronJob, CronRun, JobCreate, JobUpdate
from shared.models.gateway import GatewayChat, GatewayIdentity, WebhookRoute
from shared.models.users import User
from shared.stores import sessions

MAX_JOBS_PER_USER = 200
REQUIRED = frozenset({"name", "schedule", "prompt", "deliver", "allow", "status"})  # null clears only the others


def origin_of(db: Database, session_id: str | None) -> str:
    """Where a job asked for from this session delivers by default: its chat, or nowhere (stored only)."""
    if not session_id:
        return "none"
    with db.read() as s:
        row = s.exec(select(GatewayChat).where(GatewayChat.session_id == session_id)).first()
    parts = row.key.split("|", 1)[-1].split(":") if row is not None else []
    if len(parts) >= 5 and parts[2] == "telegram":
        return f"telegram:{parts[4]}"
    return "none"


def _zone(s, job: CronJob):
    """The job's own zone, else its user's, else the server's."""
    user = s.get(User, job.user_id)
    return schedules.zone(job.timezone or (user.timezone if user is not None else None))


def _first_run(s, job: CronJob):
    """When the job is first due from now; a time already past is refused (it could only be missed)."""
    now = utcnow()
    first = schedules.parse(job.schedule, now, _zone(s, job)).first
    if first <= now:
        raise InvalidInput("That time has already passed.", code="invalid_schedule")
    return first


def _check_deliver(s, user_id: str, deliver: str) -> None:
    """A job delivers only to its user's own chats and webhook routes."""
    kind, _, dest = deliver.partition(":")
    if kind == "webhook":
        route = s.exec(select(WebhookRoute).where(WebhookRoute.name == dest)).first()
        if route is None or route.user_id != user_id:
            raise InvalidInput(f"No webhook route {dest!r} of yours to deliver to.", code="invalid_deliver")
    elif kind == "telegram":
        keys = s.exec(select(GatewayChat.key).where(GatewayChat.user_id == user_id))
        chats = {k.split("|", 1)[-1].split(":")[4] for k in keys if k.split("|", 1)[-1].count(":") >= 4}
        bound = s.exec(select(GatewayIdentity.platform_user_id).where(GatewayIdentity.user_id == user_id,
                                                                     GatewayIdentity.platform == "telegram"))
        if dest not in chats | set(bound):
            raise InvalidInput(f"No Telegram chat {dest} of yours to deliver to.", code="invalid_deliver")


def create(db: Database, user_id: str, body: JobCreate, *, origin_session: str | None = None) -> CronJob:
    """A new active job with its own session; `deliver` "origin" (the default) is the asking chat."""
    if count(db, user_id) >= MAX_JOBS_PER_USER:
        raise InvalidInput(f"A user has at most {MAX_JOBS_PER_USER} scheduled jobs.", code="too_many_jobs")
    deliver = body.deliver or "origin"
    if deliver == "origin":
        deliver = origin_of(db, origin_session)
    job = CronJob(id=new_id("cron"), user_id=user_id, session_id="", name=body.name or body.prompt[:60],
                  schedule=body.schedule, prompt=body.prompt, deliver=deliver, skill=body.skill,
                  timezone=body.timezone, max_iterations=body.max_iterations, timeout_seconds=body.timeout_seconds,
                  allow=body.allow or [])
    with db.read() as s:
        _check_deliver(s, user_id, deliver)
        job.next_run_at = _first_run(s, job)
    session = sessions.create_session(db, user_id, title=f"cron: {job.name}"[:200], source="cron")
    job.session_id = session.id
    with db.write() as s:
        s.add(job)
    return job


def get(db: Database, user_id: str, job_id: str) -> CronJob:
    with db.read() as s:
        job = s.get(CronJob, job_id)
    if job is None or job.user_id != user_id:
        raise NotFound("No such scheduled job.", code="cron_job_not_found")
    return job


def list_jobs(db: Database, user_id: str) -> list[CronJob]:
    with db.read() as s:
        return list(s.exec(select(CronJob).where(CronJob.user_id == user_id).order_by(CronJob.created_at)))


def count(db: Database, user_id: str) -> int:
    return len(list_jobs(db, user_id))


def update(db: Database, user_id: str, job_id: str, body: JobUpdate) -> CronJob:
    """Change a job's fields; a new schedule, time zone or a resume computes the next run from now."""
    changes: dict[str, Any] = body.model_dump(exclude_unset=True)
    cleared = sorted(REQUIRED & {k for k, v in changes.items() if v is None})
    if cleared:
        raise InvalidInput(f"{', '.join(cleared)} cannot be null.")
    with db.write() as s:
        job = s.get(CronJob, job_id, with_for_update=True)
        if job is None or job.user_id != user_id:
            raise NotFound("No such scheduled job.", code="cron_job_not_found")
        if job.status == "done" and changes.get("status") and "schedule" not in changes:
            raise InvalidInput("This one-time job already ran; give it a new schedule.", code="cron_job_done")
        if changes.get("deliver") == "origin":
            changes["deliver"] = job.deliver
        _check_deliver(s, user_id, changes.get("deliver") or job.deliver)
        resumed = changes.get("status") == "active" and job.status != "active"
        for name, value in changes.items():
            setattr(job, name, value)
        if "schedule" in changes or "timezone" in changes or resumed:
            job.next_run_at = _first_run(s, job)
            job.status = changes.get("status") or "active"
        s.add(job)
    return job


def set_status(db: Database, user_id: str, job_id: str, status: str) -> CronJob:
    return update(db, user_id, job_id, JobUpdate(status=status))


def remove(db: Database, user_id: str, job_id: str) -> None:
    """Forget the job and its runs (its session and transcript stay, like any other conversation)."""
    get(db, user_id, job_id)
    with db.write() as s:
        s.execute(delete(CronRun).where(CronRun.job_id == job_id))
        s.execute(delete(CronJob).where(CronJob.id == job_id, CronJob.user_id == user_id))


def allowed(db: Database, session_id: str) -> frozenset[str]:
    """The dangerous-command kinds the owner allowed the job whose session this is (none for other sessions)."""
    with db.read() as s:
        allow = s.exec(select(CronJob.allow).where(CronJob.session_id == session_id)).first()
    return frozenset(allow or ())
