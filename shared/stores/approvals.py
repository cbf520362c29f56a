"""Approvals: the gate's automatic decisions, parked questions, human answers and timeouts.

Parking commits the pending row and moves the turn from `running` to `awaiting_approval` in one
transaction, so a parked turn is never half-parked and holds no worker. A decision (a human's, or
the timeout's) moves the turn to `queued`, marked sent, in the same transaction as the verdict:
the caller enqueues `resume_turn`, and a lost enqueue is re-sent by the turn sweeper like any
other sent turn. The resumed turn takes the decision once (`used_at`), so a worker that dies while
running an approved command never runs it a second time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import update
from sqlmodel import Session, select

from shared.clock import utcnow
from shared.db import Database
from shared.errors import InvalidState, NotFound
from shared.ids import new_id
from shared.models.approvals import Approval, ApprovalScope, ApprovalStatus
from shared.models.turns import Turn, TurnStatus

PENDING = ApprovalStatus.pending.value
PARKED = TurnStatus.awaiting_approval.value
MAX_LIST = 200


@dataclass(frozen=True)
class Verdict:
    """What the gate decided about one command of one tool call."""

    user_id: str
    session_id: str
    turn_id: str
    tool_call_id: str
    command: str
    reason: str
    rule: str
    key: str | None = None


@dataclass(frozen=True)
class Decided:
    """The row after a decision, the turn to resume (if any), and the conflict to report (if any)."""

    approval: Approval
    resume: Turn | None
    conflict: str | None = None


def record(db: Database, verdict: Verdict, *, approved: bool) -> Approval:
    """Record a decision the gate took by itself (hard line, deny list, guardian, session scope, unattended)."""
    now = utcnow()
    row = Approval(id=new_id("apr"), user_id=verdict.user_id, session_id=verdict.session_id,
                   turn_id=verdict.turn_id, tool_call_id=verdict.tool_call_id, command=verdict.command,
                   reason=verdict.reason, rule=verdict.rule, key=verdict.key,
                   status=(ApprovalStatus.approved if approved else ApprovalStatus.denied).value,
                   decided_by=f"gate:{verdict.rule}", decided_at=now, created_at=now)
    with db.write() as s:
        s.add(row)
    return row


def park(db: Database, verdict: Verdict, worker_id: str, timeout_seconds: float,
         usage: dict | None = None) -> Approval | None:
    """Commit the question and park the turn this worker runs (keeping its usage so far); None when it lost it."""
    now = utcnow()
    with db.write() as s:
        if not park_running(s, verdict.turn_id, worker_id, usage):
            return None
        row = Approval(id=new_id("apr"), user_id=verdict.user_id, session_id=verdict.session_id,
                       turn_id=verdict.turn_id, tool_call_id=verdict.tool_call_id, command=verdict.command,
                       reason=verdict.reason, rule=verdict.rule, key=verdict.key, status=PENDING,
                       expires_at=now + timedelta(seconds=timeout_seconds), created_at=now)
        s.add(row)
    return row


def decide(db: Database, user_id: str, approval_id: str, *, approve: bool, scope: str) -> Decided:
    """A human's answer; another user's id is NotFound. A row past its time is expired here (and reported)."""
    now = utcnow()
    with db.write() as s:
        row = s.exec(select(Approval).where(Approval.id == approval_id).with_for_update()).first()
        if row is None or row.user_id != user_id:
            raise NotFound("No such approval.", code="approval_not_found")
        if row.status != PENDING:
            return Decided(row, None, _conflict(row.status))
        if row.expires_at is not None and row.expires_at <= now:
            _settle(row, ApprovalStatus.expired, "timeout", now)
            s.add(row)
            return Decided(row, resume_parked(s, row.turn_id, now), _conflict(row.status))
        _settle(row, ApprovalStatus.approved if approve else ApprovalStatus.denied, user_id, now)
        row.scope = scope if approve else ApprovalScope.once.value
        s.add(row)
        return Decided(row, resume_parked(s, row.turn_id, now))


def _conflict(status: str) -> str:
    return "approval_expired" if status == ApprovalStatus.expired.value else "approval_decided"


def raise_conflict(code: str) -> None:
    """The 409 a decision on a settled approval answers with."""
    if code == "approval_expired":
        raise InvalidState("The approval expired before it was decided; the command was refused.", code=code)
    raise InvalidState("The approval was already decided.", code=code)


def _settle(row: Approval, status: ApprovalStatus, by: str, now: datetime) -> None:
    row.status, row.decided_by, row.decided_at = status.value, by, now


def park_running(s: Session, turn_id: str, worker_id: str, usage: dict | None, parked: str = PARKED) -> bool:
    """Move the turn this worker runs to `parked` (no worker held, its usage so far kept); False when it lost it."""
    moved = s.execute(
        update(Turn)
        .where(Turn.id == turn_id, Turn.worker_id == worker_id, Turn.status == TurnStatus.running.value)
        .values(status=parked, worker_id=None, heartbeat_at=None, enqueued_at=None, usage=usage or {})
    ).rowcount
    return moved == 1


def resume_parked(s: Session, turn_id: str, now: datetime, parked: str = PARKED) -> Turn | None:
    """Move the turn parked in status `parked` back to queued, marked sent: the caller enqueues resume_turn."""
    return s.scalars(
        update(Turn)
        .where(Turn.id == turn_id, Turn.status == parked)
        .values(status=TurnStatus.queued.value, enqueued_at=now)
        .returning(Turn),
        execution_options={"synchronize_session": False},
    ).one_or_none()


def expire_due(db: Database, now: datetime | None = None, limit: int = 500) -> list[tuple[Approval, Turn]]:
    """Deny every question past its time (decided_by "timeout"); returns them with the turns to resume."""
    now = now or utcnow()
    with db.write() as s:
        due = s.exec(select(Approval).where(Approval.status == PENDING, Approval.expires_at <= now)
                     .order_by(Approval.expires_at).limit(limit)).all()
        resumed = []
        for row in due:
            _settle(row, ApprovalStatus.expired, "timeout", now)
            s.add(row)
            turn = resume_parked(s, row.turn_id, now)
            if turn is not None:
                resumed.append((row, turn))
        return resumed


def answer_for(db: Database, turn_id: str, tool_call_id: str) -> Approval | None:
    """The decided, not yet used question of this tool call, if the turn parked on it."""
    with db.read() as s:
        return s.exec(select(Approval).where(
            Approval.turn_id == turn_id, Approval.tool_call_id == tool_call_id, Approval.expires_at.is_not(None),
            Approval.status != PENDING, Approval.used_at.is_(None)).order_by(Approval.created_at.desc())).first()


def was_asked(db: Database, turn_id: str, tool_call_id: str) -> bool:
    """Whether this tool call ever parked its turn (an answer already used means its effect may be unknown)."""
    with db.read() as s:
        return s.exec(select(Approval.id).where(Approval.turn_id == turn_id, Approval.tool_call_id == tool_call_id,
                                                Approval.expires_at.is_not(None))).first() is not None


def take(db: Database, approval_id: str) -> bool:
    """Mark the answer used; False when another attempt at the turn already took it."""
    with db.write() as s:
        return s.execute(update(Approval).where(Approval.id == approval_id, Approval.used_at.is_(None))
                         .values(used_at=utcnow())).rowcount == 1


def session_keys(db: Database, session_id: str) -> frozenset[str]:
    """Pattern keys a human approved for the rest of this session."""
    with db.read() as s:
        keys = s.exec(select(Approval.key).where(
            Approval.session_id == session_id, Approval.scope == ApprovalScope.session.value,
            Approval.status == ApprovalStatus.approved.value, Approval.key.is_not(None))).all()
    return frozenset(keys)


def pending_for_turn(db: Database, turn_id: str) -> Approval | None:
    with db.read() as s:
        return s.exec(select(Approval).where(Approval.turn_id == turn_id, Approval.status == PENDING)).first()


def list_approvals(db: Database, user_id: str, *, pending_only: bool, limit: int = 100) -> list[Approval]:
    """The user's approvals: pending ones oldest first (the order they resolve in), or all newest first."""
    query = select(Approval).where(Approval.user_id == user_id)
    if pending_only:
        query = query.where(Approval.status == PENDING).order_by(Approval.created_at, Approval.id)
    else:
        query = query.order_by(Approval.created_at.desc(), Approval.id.desc())
    with db.read() as s:
        return list(s.exec(query.limit(min(limit, MAX_LIST))))


def for_turn(db: Database, user_id: str, turn_id: str) -> list[Approval]:
    """The user's approvals on one turn, oldest first (what a chat page shows beside that turn)."""
    query = (select(Approval).where(Approval.user_id == user_id, Approval.turn_id == turn_id)
             .order_by(Approval.created_at, Approval.id))
    with db.read() as s:
        return list(s.exec(query.limit(MAX_LIST)))
