"""The curator's ledger and schedule: per-user pass state, runs and their skill transitions.

Rows are written as things happen: a run row first, each transition right after its move (in the
move's lock, see curator_moves), the state when the pass ends. The ledger never claims a change that
was not made; a crash mid-pass loses at most the row of the move it interrupted (the backup taken
before the pass still holds the earlier state), and the next check runs the pass again.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import func
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, select

from shared.db import Database
from shared.ids import new_id
from shared.models.curator import (
    CuratorRun,
    CuratorState,
    CuratorStatePublic,
    CuratorTransition,
    RunKind,
    RunPublic,
    TransitionPublic,
)
from shared.models.skills import SkillOrigin, SkillRecord
from shared.models.turns import PARKED_STATUSES, Turn, TurnStatus

SUMMARY_CHARS = 240
BUSY = (TurnStatus.queued.value, TurnStatus.running.value, *PARKED_STATUSES)


def _insert(s: Session):
    module = postgresql if s.get_bind().dialect.name == "postgresql" else sqlite
    return module.insert(CuratorState)


def state(db: Database, user_id: str) -> CuratorState | None:
    with db.read() as s:
        return s.get(CuratorState, user_id)


def seed(db: Database, user_id: str, now: datetime) -> None:
    """Start a user's interval now without a pass (a concurrent seed is not an error)."""
    with db.write() as s:
        s.execute(_insert(s).values(user_id=user_id, last_pass_at=now, pass_count=0,
                                    last_summary="first seen: the first pass comes one interval later")
                  .on_conflict_do_nothing(index_elements=["user_id"]))


def start_run(db: Database, user_id: str, kind: RunKind, now: datetime, backup_path: str | None = None,
              summary: str = "") -> str:
    """A new run row (`summary`: what it is about to do, until it finishes); returns its id."""
    run = CuratorRun(id=new_id("cur"), user_id=user_id, kind=kind.value, started_at=now, backup_path=backup_path,
                     summary=summary[:SUMMARY_CHARS])
    with db.write() as s:
        s.add(run)
    return run.id


def add_transition(s: Session, run_id: str, user_id: str, skill: str, from_state: str, to_state: str,
                   reason: str, at: datetime) -> None:
    """A ledger row, inside the caller's transaction (the move's lock is held around it)."""
    s.add(CuratorTransition(run_id=run_id, user_id=user_id, skill=skill, from_state=from_state,
                            to_state=to_state, reason=reason[:300], at=at))


def record_transition(db: Database, run_id: str, user_id: str, skill: str, from_state: str, to_state: str,
                      reason: str, at: datetime) -> None:
    """A ledger row in its own transaction: a change that is not a state change of an existing skill (an umbrella)."""
    with db.write() as s:
        add_transition(s, run_id, user_id, skill, from_state, to_state, reason, at)


def transitions_of(db: Database, run_id: str) -> list[CuratorTransition]:
    """One run's ledger rows, in the order they were written."""
    with db.read() as s:
        return list(s.exec(select(CuratorTransition).where(CuratorTransition.run_id == run_id)
                           .order_by(CuratorTransition.id)))


def unfinished_runs(db: Database, user_id: str, kind: RunKind) -> list[CuratorRun]:
    """This user's runs of a kind that never finished, oldest first: seen under the curator lock, their process died."""
    query = (select(CuratorRun).where(CuratorRun.user_id == user_id, CuratorRun.kind == kind.value,
                                      CuratorRun.finished_at.is_(None)).order_by(CuratorRun.started_at))
    with db.read() as s:
        return list(s.exec(query))


def finish_run(db: Database, run_id: str, now: datetime, summary: str, *, pass_done: bool) -> None:
    """Close a run; a finished pass also restarts its user's interval."""
    with db.write() as s:
        run = s.get(CuratorRun, run_id)
        run.finished_at, run.summary = now, summary[:SUMMARY_CHARS]
        s.add(run)
        if not pass_done:
            return
        row = s.get(CuratorState, run.user_id) or CuratorState(user_id=run.user_id, last_pass_at=now)
        row.last_pass_at, row.pass_count, row.last_summary = now, row.pass_count + 1, run.summary
        s.add(row)


def last_changes(db: Database, user_id: str) -> dict[str, CuratorTransition]:
    """The latest ledger row of each skill of this user."""
    latest = (select(func.max(CuratorTransition.id)).where(CuratorTransition.user_id == user_id)
              .group_by(CuratorTransition.skill).scalar_subquery())
    with db.read() as s:
        rows = s.exec(select(CuratorTransition).where(CuratorTransition.id.in_(latest)))
        return {row.skill: row for row in rows}


def last_change(db: Database, user_id: str, skill: str) -> CuratorTransition | None:
    query = (select(CuratorTransition).where(CuratorTransition.user_id == user_id, CuratorTransition.skill == skill)
             .order_by(CuratorTransition.id.desc()).limit(1))
    with db.read() as s:
        return s.exec(query).first()


def is_last_change(db: Database, row: CuratorTransition) -> bool:
    """Whether `row` is still its skill's latest ledger row (nothing changed the skill since)."""
    latest = last_change(db, row.user_id, row.skill)
    return latest is not None and latest.id == row.id


def last_turn_at(db: Database, user_id: str, now: datetime) -> datetime | None:
    """When the user last had a turn: now while one is waiting or running, else the newest turn's start."""
    with db.read() as s:
        busy = s.exec(select(Turn.id).where(Turn.user_id == user_id, Turn.status.in_(BUSY)).limit(1)).first()
        if busy is not None:
            return now
        return s.exec(select(func.max(Turn.created_at)).where(Turn.user_id == user_id)).one()


def users_with_agent_skills(db: Database) -> list[str]:
    """Every user the curator may have work for, by id."""
    query = select(SkillRecord.user_id).where(SkillRecord.origin == SkillOrigin.agent.value).distinct()
    with db.read() as s:
        return sorted(s.exec(query))


def runs(db: Database, user_id: str, limit: int = 20) -> list[RunPublic]:
    """This user's runs with their transitions, newest first."""
    query = (select(CuratorRun).where(CuratorRun.user_id == user_id)
             .order_by(CuratorRun.started_at.desc(), CuratorRun.id.desc()).limit(limit))
    with db.read() as s:
        return _public(s, list(s.exec(query)))


def run(db: Database, run_id: str) -> RunPublic:
    with db.read() as s:
        return _public(s, [s.get(CuratorRun, run_id)])[0]


def _public(s: Session, rows: list[CuratorRun]) -> list[RunPublic]:
    """Runs with their transitions, in the order given."""
    by_run: dict[str, list[TransitionPublic]] = {r.id: [] for r in rows}
    if rows:
        moves = s.exec(select(CuratorTransition).where(CuratorTransition.run_id.in_(list(by_run)))
                       .order_by(CuratorTransition.id))
        for t in moves:
            by_run[t.run_id].append(TransitionPublic.model_validate(t, from_attributes=True))
    return [RunPublic(id=r.id, kind=RunKind(r.kind), started_at=r.started_at, finished_at=r.finished_at,
                      backup_path=r.backup_path, summary=r.summary, transitions=by_run[r.id]) for r in rows]


def public_state(db: Database, user_id: str, interval: timedelta) -> CuratorStatePublic | None:
    row = state(db, user_id)
    if row is None:
        return None
    return CuratorStatePublic(last_pass_at=row.last_pass_at, next_pass_after=row.last_pass_at + interval,
                              pass_count=row.pass_count, last_summary=row.last_summary)
