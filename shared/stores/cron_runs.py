"""Runs of scheduled jobs: the tick claims due jobs under a row lock and starts each as a turn of the job's
own session; a later tick settles each run from how its turn really ended and records its delivery.

Claiming is safe with several ticks at once (two beats by mistake, a tick retried after a crash): on
Postgres the due rows are locked FOR UPDATE SKIP LOCKED, so a second tick takes other rows or none; on
both backends the job's UPDATE is guarded by the `next_run_at` it was read with, so a job whose slot
another tick already took is skipped. The run, its turn and the job's next time commit together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import bindparam, update
from sqlmodel import Session, select

from shared.cron import outcome as outcomes
from shared.cron import schedule as schedules
from shared.db import Database
from shared.errors import InvalidInput, NotFound
from shared.ids import new_id
from shared.models.approvals import Approval, ApprovalStatus
from shared.models.cron import CronJob, CronRun
from shared.models.gateway import OutboxItem
from shared.models.turns import TERMINAL_STATUSES, Turn, TurnStatus
from shared.models.users import User
from shared.stores.turn_slots import take_slots
from shared.stores.turns import add_turn

REFUSING_RULES = ("hardline", "deny_list", "guardian", "unattended")
ENDED = tuple(s.value for s in TERMINAL_STATUSES)


@dataclass
class Claimed:
    """What one tick claimed: runs started, turns to send now (the user's free slots allowed them), runs missed."""

    started: list[CronRun] = field(default_factory=list)
    send: list[Turn] = field(default_factory=list)
    missed: list[CronRun] = field(default_factory=list)
    examined: int = 0  # due jobs read, busy ones and those another tick took included


def claim_due(db: Database, now: datetime, *, limit: int, grace_seconds: float, max_running: int) -> Claimed:
    """Claim up to `limit` due jobs and start one run of each (a one-time job late past the grace: missed)."""
    claimed = Claimed()
    with db.write() as s:
        query = (select(CronJob).where(CronJob.status == "active", CronJob.next_run_at <= now)
                 .order_by(CronJob.next_run_at).limit(limit))
        if s.get_bind().dialect.name == "postgresql":
            query = query.with_for_update(skip_locked=True)
        # One user's row is locked by each run's turn (its free slots): taking users in one order means two
        # ticks wait for each other instead of deadlocking.
        jobs = sorted(s.exec(query), key=lambda j: (j.user_id, j.id))
        claimed.examined = len(jobs)
        zones = dict(s.exec(select(User.id, User.timezone).where(User.id.in_({j.user_id for j in jobs}))).all())
        busy = set(s.exec(select(CronRun.job_id).where(CronRun.job_id.in_([j.id for j in jobs]),
                                                       CronRun.status == "running")))
        for job in jobs:
            _claim_one(s, job, zones.get(job.user_id), now, grace_seconds, claimed, busy=job.id in busy)
        s.add_all(claimed.started + claimed.missed)
        _send_for(s, claimed, max_running)
    return claimed


def _send_for(s: Session, claimed: Claimed, max_running: int) -> None:
    """The turns the users' free slots let go now, one slot decision per user (in user order, see above)."""
    for user_id in sorted({run.user_id for run in claimed.started}):
        claimed.send.extend(take_slots(s, user_id, max_running))


def _claim_one(s: Session, job: CronJob, user_zone: str | None, now: datetime, grace_seconds: float,
               claimed: Claimed, *, busy: bool = False) -> None:
    """Take the job's due slot and start its run; a job whose last run is still going skips this slot (runs
    never pile up behind a slow one)."""
    due = job.next_run_at
    try:
        tz = schedules.zone(job.timezone or user_zone)
        parsed = schedules.parse(job.schedule, due, tz)
        following = schedules.next_run(parsed, due, now, tz)
    except InvalidInput as exc:  # a zone the server no longer knows: this job stops, the others run
        return _unreadable(s, job, now, exc.message, claimed)
    status = "active" if following is not None else "done"
    late = max(0.0, (now - due).total_seconds())
    missed = parsed.kind == "once" and late > grace_seconds
    last = "missed" if missed else "running"
    taken = s.execute(_TAKE_SLOT, {"job": job.id, "seen": due, "next": following, "status": status, "now": now,
                                   "last": last}).rowcount
    if taken != 1 or busy:
        return  # another tick took this slot first, or the job is still busy with its last run
    run = CronRun(id=new_id("crun"), job_id=job.id, user_id=job.user_id, due_at=due, started_at=now,
                  late_by_seconds=late)
    if missed:
        run.status, run.finished_at = "missed", now
        run.delivery_id = _deliver(s, job, run, now)
        claimed.missed.append(run)
    else:
        _start(s, job, run, claimed)


def _unreadable(s: Session, job: CronJob, now: datetime, why: str, claimed: Claimed) -> None:
    """Pause a job whose schedule can no longer be read, with a failed run that says why."""
    taken = s.execute(_TAKE_SLOT, {"job": job.id, "seen": job.next_run_at, "next": None, "status": "paused",
                                   "now": now, "last": "failed"}).rowcount
    if taken == 1:
        run = CronRun(id=new_id("crun"), job_id=job.id, user_id=job.user_id, due_at=job.next_run_at, started_at=now,
                      finished_at=now, status="failed", error=f"the job was paused: {why}")
        run.delivery_id = _deliver(s, job, run, now)
        claimed.missed.append(run)


# A Core statement: the ORM's UPDATE would match it against every job the batch loaded (half the tick's time).
_JOBS = CronJob.__table__
_TAKE_SLOT = (update(_JOBS).where(_JOBS.c.id == bindparam("job"), _JOBS.c.status == "active",
                                  _JOBS.c.next_run_at == bindparam("seen"))
              .values(next_run_at=bindparam("next"), status=bindparam("status"), last_run_at=bindparam("now"),
                      last_status=bindparam("last")))


def _start(s: Session, job: CronJob, run: CronRun, claimed: Claimed) -> None:
    """The run's turn, unattended, in the job's own session (never behind the user's open chat turn)."""
    turn, _ = add_turn(s, job.user_id, job.session_id, _turn_input(job, run.due_at, run.late_by_seconds),
                       interactive=False, max_iterations=job.max_iterations)
    run.turn_id = turn.id
    claimed.started.append(run)


def run_now(db: Database, user_id: str, job_id: str, now: datetime, *, max_running: int) -> Claimed:
    """One run of the job at once (its schedule unchanged); another user's job is NotFound."""
    claimed = Claimed()
    with db.write() as s:
        job = s.get(CronJob, job_id, with_for_update=True)  # a tick claiming it at once skips or waits for it
        if job is None or job.user_id != user_id:
            raise NotFound("No such scheduled job.", code="cron_job_not_found")
        run = CronRun(id=new_id("crun"), job_id=job.id, user_id=user_id, due_at=now, started_at=now)
        _start(s, job, run, claimed)
        job.last_run_at, job.last_status = now, "running"
        s.add_all([run, job])
        _send_for(s, claimed, max_running)
    return claimed


def _turn_input(job: CronJob, due: datetime, late: float) -> str:
    """The prompt as the agent reads it: said to be a scheduled, unattended run (and late, when it is)."""
    lines = [f"[Scheduled job {job.name!r}, due {due:%Y-%m-%d %H:%M} UTC. Nobody is watching this run: commands "
             "that need approval are refused. Your final answer is delivered to the user.]"]
    if note := outcomes.late_note(late, due):
        lines.append(note.strip())
    if job.skill:
        lines.append(f"First load the skill {job.skill!r} with skill_view and follow it.")
    return "\n".join(lines) + "\n\n" + job.prompt


def settle(db: Database, now: datetime, *, limit: int = 200) -> list[CronRun]:
    """Runs whose turn ended or whose time ran out: their real outcome recorded and their delivery queued."""
    settled = []
    for run, turn, job in _running(db, Turn.status.in_(ENDED), limit):
        verdict = outcomes.judge(turn.status, turn.output, turn.error_code, turn.error_message, _refusals(db, turn.id))
        settled.extend(r for r in [_finish(db, run.id, verdict, now)] if r is not None)
    for run, turn, job in _running(db, Turn.status.not_in(ENDED) & CronJob.timeout_seconds.is_not(None), limit):
        if (now - run.started_at).total_seconds() > job.timeout_seconds:
            verdict = outcomes.Outcome("failed", None, f"timed out after {job.timeout_seconds:g} seconds")
            settled.extend(r for r in [_finish(db, run.id, verdict, now)] if r is not None)
    return settled


def _running(db: Database, condition, limit: int) -> list[tuple[CronRun, Turn, CronJob]]:
    """Running runs whose turn meets `condition`, oldest first."""
    with db.read() as s:
        return list(s.exec(select(CronRun, Turn, CronJob).join(Turn, Turn.id == CronRun.turn_id)
                           .join(CronJob, CronJob.id == CronRun.job_id)
                           .where(CronRun.status == "running", condition).order_by(CronRun.started_at).limit(limit)))


def _refusals(db: Database, turn_id: str) -> list[tuple[str, str]]:
    with db.read() as s:
        rows = s.exec(select(Approval).where(Approval.turn_id == turn_id, Approval.rule.in_(REFUSING_RULES),
                                             Approval.status == ApprovalStatus.denied.value)
                      .order_by(Approval.created_at))
        return [(a.command, a.reason) for a in rows]


def _finish(db: Database, run_id: str, verdict: outcomes.Outcome, now: datetime) -> CronRun | None:
    """Record the outcome once (a second settler finds the run no longer running) with its delivery."""
    with db.write() as s:
        run = s.get(CronRun, run_id, with_for_update=True)
        if run is None or run.status != "running":
            return None
        run.status, run.output, run.error, run.finished_at = verdict.status, verdict.output, verdict.error, now
        job = s.get(CronJob, run.job_id)
        job.last_status = verdict.status
        run.delivery_id = _deliver(s, job, run, now)
        if verdict.status == "failed" and run.turn_id:
            _cancel(s, run.turn_id, now)
        s.add_all([run, job])
    return run


def _cancel(s: Session, turn_id: str, now: datetime) -> None:
    """A run that timed out: its queued turn ends now, a running one is told to stop."""
    s.execute(update(Turn).where(Turn.id == turn_id, Turn.status == TurnStatus.queued.value)
              .values(status=TurnStatus.cancelled.value, finished_at=now))
    s.execute(update(Turn).where(Turn.id == turn_id, Turn.status.not_in(ENDED)).values(cancel_requested=True))


def _deliver(s: Session, job: CronJob, run: CronRun, now: datetime) -> str | None:
    """Record the run's message in the outbox (the gateway sends and retries it), unless it is stored only."""
    kind, _, dest = job.deliver.partition(":")
    if kind not in ("telegram", "webhook") or not dest:
        return None
    target, chat_id = (f"telegram:{dest}", dest) if kind == "telegram" else (f"callback:{dest}", "")
    text = outcomes.message(job.name, run.status, run.output, run.error, run.late_by_seconds, run.due_at)
    item = OutboxItem(id=new_id("out"), user_id=job.user_id, target=target, chat_id=chat_id, turn_id=run.turn_id,
                      text=text, next_attempt_at=now, created_at=now)
    s.add(item)
    return item.id


def list_runs(db: Database, user_id: str, job_id: str, limit: int = 50) -> list[CronRun]:
    with db.read() as s:
        return list(s.exec(select(CronRun).where(CronRun.job_id == job_id, CronRun.user_id == user_id)
                           .order_by(CronRun.started_at.desc()).limit(limit)))
