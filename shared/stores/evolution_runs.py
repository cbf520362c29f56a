"""Skill evolution runs: start (within the daily budget), claim, progress, cancel, finish, propose, restore.

A run's proposal is written in one transaction with the run's own final state: the staged skill write
(the pending-skill-write flow, with its diff) and the row that says `proposed`. A run stopped before
that leaves no staged write; one stopped after it is finished. The owner's approval of the staged write
applies it; `restore` writes back the text the run started from, kept on the row.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, update
from sqlmodel import select

from shared.clock import utcnow
from shared.config import Settings
from shared.db import Database
from shared.errors import Conflict, InvalidInput, NotFound, RateLimited
from shared.evolution.meter import Meter
from shared.ids import new_id
from shared.models.evolution import FINISHED, EvolutionRun, EvolutionRunPublic, EvolutionStatus
from shared.models.skills import SkillOrigin, SkillStagedWrite, SkillState, SkillWriter
from shared.stores import skill_staged
from shared.stores.skill_writes import SkillEditor
from shared.stores.skills import Located, SkillStore

DAY = timedelta(hours=24)
ACTIVE = (EvolutionStatus.queued.value, EvolutionStatus.running.value)
STALE_AFTER = timedelta(minutes=5)  # a running run whose worker sent no heartbeat this long was interrupted
WORKER_DIED = "The worker running it stopped mid-way; nothing was written."
CANCELLED_QUEUED = "Cancelled before it started; nothing was written."


def _not_found() -> NotFound:
    return NotFound("No such evolution run.", code="evolution_run_not_found")


def evolvable(store: SkillStore, name: str) -> Located:
    """The skill, refused when a run could never change it: missing, archived or bundled (read-only)."""
    skill = store.get(name)
    if skill.state is SkillState.archived:
        raise NotFound(f"The skill {name!r} is archived; restore it first.", code="skill_not_found")
    if skill.origin is SkillOrigin.bundled:
        raise InvalidInput(f"{name!r} is a bundled skill and read-only; only your own and the agent's skills evolve.",
                           code="skill_read_only")
    return skill


def spent_today(db: Database, user_id: str, now: datetime) -> tuple[int, int]:
    """(runs started, tokens spent) by this user's runs in the last 24 hours."""
    query = select(func.count(EvolutionRun.id),
                   func.coalesce(func.sum(EvolutionRun.prompt_tokens + EvolutionRun.completion_tokens), 0)
                   ).where(EvolutionRun.user_id == user_id, EvolutionRun.created_at > now - DAY)
    with db.read() as s:
        runs, tokens = s.exec(query).one()
    return int(runs), int(tokens)


def start(db: Database, settings: Settings, user_id: str, skill: str, budget: int | None = None,
          trigger: str = "manual") -> EvolutionRun:
    """A queued run within the user's daily budget; one active run per skill at a time. The caller enqueues its id."""
    evolvable(SkillStore.for_user(db, settings, user_id), skill)
    now = utcnow()
    fail_stale(db, now, user_id)  # a run whose worker died no longer blocks a new one
    runs, tokens = spent_today(db, user_id, now)
    if runs >= settings.evolve_daily_runs:
        raise RateLimited(f"{runs} evolution run(s) in the last 24 hours; the limit is {settings.evolve_daily_runs} "
                          "(EVOLVE_DAILY_RUNS).", code="evolution_budget_exhausted", retry_after=3600)
    left = settings.evolve_daily_tokens - tokens
    if left < 1_000:
        raise RateLimited(f"Evolution runs spent {tokens:,} tokens in the last 24 hours; the limit is "
                          f"{settings.evolve_daily_tokens:,} (EVOLVE_DAILY_TOKENS).",
                          code="evolution_budget_exhausted", retry_after=3600)
    run = EvolutionRun(id=new_id("evo"), user_id=user_id, skill=skill, trigger=trigger,
                       budget_metric_calls=min(budget or settings.evolve_metric_calls, settings.evolve_metric_calls),
                       budget_tokens=min(settings.evolve_run_tokens, left), created_at=now)
    with db.write() as s:
        busy = s.exec(select(EvolutionRun.id).where(EvolutionRun.user_id == user_id, EvolutionRun.skill == skill,
                                                    EvolutionRun.status.in_(ACTIVE)).limit(1)).first()
        if busy is not None:
            raise Conflict(f"An evolution run of {skill!r} is already under way ({busy}).", code="evolution_run_active")
        s.add(run)
    return run


def fail_stale(db: Database, now: datetime, user_id: str | None = None) -> int:
    """Fail running runs whose worker stopped sending heartbeats (killed mid-run): nothing of theirs was staged,
    since a proposal is written with the run's final state in one transaction. Returns how many."""
    where = [EvolutionRun.status == EvolutionStatus.running.value, EvolutionRun.heartbeat_at < now - STALE_AFTER]
    if user_id is not None:
        where.append(EvolutionRun.user_id == user_id)
    with db.write() as s:
        result = s.execute(update(EvolutionRun).where(*where).values(
            status=EvolutionStatus.failed.value, finished_at=now, stage="",
            error=WORKER_DIED))
        return result.rowcount or 0


def get(db: Database, user_id: str, run_id: str) -> EvolutionRun:
    """This user's run; another user's answers like a missing one."""
    with db.read() as s:
        run = s.get(EvolutionRun, run_id)
    if run is None or run.user_id != user_id:
        raise _not_found()
    return run


def load(db: Database, run_id: str) -> EvolutionRun | None:
    with db.read() as s:
        return s.get(EvolutionRun, run_id)


def list_runs(db: Database, user_id: str, limit: int = 20) -> list[EvolutionRun]:
    query = (select(EvolutionRun).where(EvolutionRun.user_id == user_id)
             .order_by(EvolutionRun.created_at.desc(), EvolutionRun.id.desc()).limit(limit))
    with db.read() as s:
        return list(s.exec(query))


def public(db: Database, runs: list[EvolutionRun]) -> list[EvolutionRunPublic]:
    """Runs as the api shows them, each with the owner's decision on its proposal."""
    staged = [r.staged_id for r in runs if r.staged_id]
    decisions: dict[str, str] = {}
    if staged:
        with db.read() as s:
            now = utcnow()
            for row in s.exec(select(SkillStagedWrite).where(SkillStagedWrite.id.in_(staged))):
                expired = row.status == skill_staged.PENDING and row.expires_at <= now
                decisions[row.id] = skill_staged.EXPIRED if expired else row.status
    return [EvolutionRunPublic.model_validate({**r.model_dump(), "proposal": decisions.get(r.staged_id or "")})
            for r in runs]


def claim(db: Database, run_id: str, worker: str, now: datetime) -> EvolutionRun | None:
    """Take a queued run for this worker. A running run whose heartbeat stopped was interrupted (its worker
    died): it is failed, never re-run, so a crash never spends its budget twice. None: nothing to do."""
    with db.write() as s:
        run = s.exec(select(EvolutionRun).where(EvolutionRun.id == run_id).with_for_update()).first()
        if run is None or run.status not in ACTIVE:
            return None
        if run.status == EvolutionStatus.running.value:
            if run.heartbeat_at is not None and now - run.heartbeat_at < STALE_AFTER:
                return None  # a duplicate delivery while the run is alive
            _close(run, EvolutionStatus.failed, now, "", error=WORKER_DIED)
            s.add(run)
            return None
        if run.cancel_requested:
            _close(run, EvolutionStatus.cancelled, now, CANCELLED_QUEUED)
            s.add(run)
            return None
        run.status, run.worker, run.started_at, run.heartbeat_at = EvolutionStatus.running.value, worker, now, now
        s.add(run)
    return run


def cancel_requested(db: Database, run_id: str) -> bool:
    with db.read() as s:
        return bool(s.exec(select(EvolutionRun.cancel_requested).where(EvolutionRun.id == run_id)).first())


def cancel(db: Database, user_id: str, run_id: str) -> EvolutionRun:
    """Ask a run to stop: a queued one is cancelled now, a running one at its next model call. 409 once finished."""
    now = utcnow()
    with db.write() as s:
        run = s.exec(select(EvolutionRun).where(EvolutionRun.id == run_id).with_for_update()).first()
        if run is None or run.user_id != user_id:
            raise _not_found()
        if run.status not in ACTIVE:
            raise Conflict(f"This run already ended ({run.status}).", code="evolution_run_finished")
        run.cancel_requested = True
        if run.status == EvolutionStatus.queued.value:
            _close(run, EvolutionStatus.cancelled, now, CANCELLED_QUEUED)
        s.add(run)
    return run


def _counters(meter: Meter) -> dict[str, Any]:
    return {"metric_calls": meter.metric_calls, "model_calls": meter.model_calls, "prompt_tokens": meter.prompt_tokens,
            "completion_tokens": meter.completion_tokens}


def _count(run: EvolutionRun, meter: Meter) -> None:
    for key, value in _counters(meter).items():
        setattr(run, key, value)


def progress(db: Database, run_id: str, meter: Meter, now: datetime) -> None:
    """The run's counters, stage and heartbeat (what `hstack evolve` and the console show as progress)."""
    with db.write() as s:
        s.execute(update(EvolutionRun).where(EvolutionRun.id == run_id, EvolutionRun.status == "running")
                  .values(progress=round(meter.progress, 4), stage=meter.stage[:120], heartbeat_at=now,
                          **_counters(meter)))


def note_evidence(db: Database, run_id: str, evidence: dict[str, Any], baseline: str) -> None:
    with db.write() as s:
        s.execute(update(EvolutionRun).where(EvolutionRun.id == run_id).values(evidence=evidence, baseline=baseline))


def _close(run: EvolutionRun, status: EvolutionStatus, now: datetime, summary: str, *, error: str | None = None) -> None:
    run.status, run.finished_at, run.summary, run.error = status.value, now, summary[:500], (error or None)
    run.stage = ""
    if status in (EvolutionStatus.proposed, EvolutionStatus.no_improvement):
        run.progress = 1.0


def finish(db: Database, run_id: str, status: EvolutionStatus, meter: Meter | None, summary: str,
           scores: dict[str, Any] | None = None, error: str | None = None) -> None:
    """End a running run with nothing proposed (no improvement, cancelled, failed)."""
    assert status in FINISHED and status is not EvolutionStatus.proposed
    with db.write() as s:
        run = s.exec(select(EvolutionRun).where(EvolutionRun.id == run_id).with_for_update()).first()
        if run is None or run.status != EvolutionStatus.running.value:
            return
        _close(run, status, utcnow(), summary, error=error)
        if meter is not None:
            _count(run, meter)
        run.scores = scores if scores is not None else run.scores
        s.add(run)


def propose(db: Database, settings: Settings, run_id: str, meter: Meter, summary: str, scores: dict[str, Any],
            baseline: str, proposed: str) -> EvolutionRun | None:
    """Stage the better text (a patch that only applies to the text the run started from) and finish the run,
    in one transaction. A cancel that arrived meanwhile wins: nothing is staged. None: the run was not running."""
    with db.write() as s:
        run = s.exec(select(EvolutionRun).where(EvolutionRun.id == run_id).with_for_update()).first()
        if run is None or run.status != EvolutionStatus.running.value:
            return None
        if run.cancel_requested:
            _close(run, EvolutionStatus.cancelled, utcnow(), "Cancelled before its proposal was staged; nothing was "
                                                               "written.")
            s.add(run)
            return run
        editor = SkillEditor(SkillStore.for_user(db, settings, run.user_id), SkillWriter.user)
        row = skill_staged.planned_row(editor, settings, "patch",
                                       {"name": run.skill, "old_string": baseline, "new_string": proposed})
        row.summary = (f"evolve {run.skill!r} (run {run.id}): {summary} Cost: {meter.model_calls} model calls, "
                       f"{meter.tokens:,} tokens.")[:1_000]
        s.add(row)
        _close(run, EvolutionStatus.proposed, utcnow(), summary)
        run.staged_id, run.proposed, run.diff, run.scores = row.id, proposed, row.diff, scores
        _count(run, meter)
        s.add(run)
    return run


def restore(db: Database, settings: Settings, user_id: str, run_id: str) -> EvolutionRun:
    """Write back the text an applied proposal replaced; refused when the skill changed since (409)."""
    run = get(db, user_id, run_id)
    decided = public(db, [run])[0].proposal
    if decided != skill_staged.APPROVED or not run.baseline or not run.proposed:
        raise Conflict("Only an approved proposal can be rolled back; this run's was not applied.",
                       code="nothing_to_restore")
    if run.restored_at is not None:
        raise Conflict("This run's change was already rolled back.", code="nothing_to_restore")
    store = SkillStore.for_user(db, settings, user_id)
    editor = SkillEditor(store, SkillWriter.user)
    editor.patch(run.skill, run.proposed, run.baseline)  # refuses (no match) when the skill changed since
    with db.write() as s:
        row = s.exec(select(EvolutionRun).where(EvolutionRun.id == run_id).with_for_update()).first()
        row.restored_at = utcnow()
        s.add(row)
    return row
