"""Clarifications: the agent's multiple-choice questions, parked and answered like approvals.

Parking commits the pending row and moves the turn from `running` to `awaiting_input` in one transaction.
An answer (the user's, or the timeout's "no answer") moves the turn to `queued`, marked sent, in the same
transaction: the caller enqueues `resume_turn`, and the resumed turn takes the answer once (`used_at`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import update
from sqlmodel import select

from shared.clock import utcnow
from shared.db import Database
from shared.errors import InvalidInput, InvalidState, NotFound
from shared.ids import new_id
from shared.models.clarifications import Clarification, ClarificationStatus
from shared.models.turns import Turn, TurnStatus
from shared.stores.approvals import park_running, resume_parked

PENDING = ClarificationStatus.pending.value
PARKED = TurnStatus.awaiting_input.value
MAX_LIST = 200


@dataclass(frozen=True)
class Question:
    """What one `clarify` call asks."""

    user_id: str
    session_id: str
    turn_id: str
    tool_call_id: str
    question: str
    choices: tuple[str, ...]


@dataclass(frozen=True)
class Answered:
    """The row after an answer, the turn to resume (if any), and the 409 to report once it is sent on (if any)."""

    clarification: Clarification
    resume: Turn | None
    conflict: str | None = None

    def raise_conflict(self) -> None:
        if self.conflict:
            raise InvalidState(f"The question was already {self.clarification.status}.", code=self.conflict)


def park(db: Database, ask: Question, worker_id: str, timeout_seconds: float,
         usage: dict | None = None) -> Clarification | None:
    """Commit the question and park the turn this worker runs (keeping its usage so far); None when it lost it."""
    now = utcnow()
    with db.write() as s:
        if not park_running(s, ask.turn_id, worker_id, usage, PARKED):
            return None
        row = Clarification(id=new_id("clr"), user_id=ask.user_id, session_id=ask.session_id, turn_id=ask.turn_id,
                            tool_call_id=ask.tool_call_id, question=ask.question, choices=list(ask.choices),
                            status=PENDING, expires_at=now + timedelta(seconds=timeout_seconds), created_at=now)
        s.add(row)
    return row


def answer(db: Database, user_id: str, clarification_id: str, choice: str) -> Answered:
    """The user's choice; another user's id is NotFound, a choice not offered InvalidInput, a settled one a conflict."""
    now = utcnow()
    with db.write() as s:
        row = s.exec(select(Clarification).where(Clarification.id == clarification_id).with_for_update()).first()
        if row is None or row.user_id != user_id:
            raise NotFound("No such clarification.", code="clarification_not_found")
        if row.status != PENDING:
            return Answered(row, None, f"clarification_{row.status}")
        if row.expires_at <= now:  # past its time: settled as no answer here, and its turn goes on
            row.status, row.answered_at = ClarificationStatus.expired.value, now
            s.add(row)
            return Answered(row, resume_parked(s, row.turn_id, now, PARKED), "clarification_expired")
        if choice not in row.choices:
            raise InvalidInput("The choice must be one of the question's choices.", code="clarification_choice")
        row.status, row.choice, row.answered_at = ClarificationStatus.answered.value, choice, now
        s.add(row)
        return Answered(row, resume_parked(s, row.turn_id, now, PARKED))


def expire_due(db: Database, now: datetime | None = None, limit: int = 500) -> list[tuple[Clarification, Turn]]:
    """Settle every question past its time as unanswered; returns them with the turns to resume."""
    now = now or utcnow()
    with db.write() as s:
        due = s.exec(select(Clarification).where(Clarification.status == PENDING, Clarification.expires_at <= now)
                     .order_by(Clarification.expires_at).limit(limit)).all()
        resumed = []
        for row in due:
            row.status, row.answered_at = ClarificationStatus.expired.value, now
            s.add(row)
            turn = resume_parked(s, row.turn_id, now, PARKED)
            if turn is not None:
                resumed.append((row, turn))
        return resumed


def answer_for(db: Database, turn_id: str, tool_call_id: str) -> Clarification | None:
    """The settled, not yet used question of this tool call, if the turn parked on it."""
    with db.read() as s:
        return s.exec(select(Clarification).where(
            Clarification.turn_id == turn_id, Clarification.tool_call_id == tool_call_id,
            Clarification.status != PENDING, Clarification.used_at.is_(None))
            .order_by(Clarification.created_at.desc())).first()


def take(db: Database, clarification_id: str) -> bool:
    """Mark the answer used; False when another attempt at the turn already took it."""
    with db.write() as s:
        return s.execute(update(Clarification).where(Clarification.id == clarification_id,
                                                     Clarification.used_at.is_(None))
                         .values(used_at=utcnow())).rowcount == 1


def list_pending(db: Database, user_id: str, limit: int = 100) -> list[Clarification]:
    """The user's open questions, oldest first."""
    query = (select(Clarification).where(Clarification.user_id == user_id, Clarification.status == PENDING)
             .order_by(Clarification.created_at, Clarification.id).limit(min(limit, MAX_LIST)))
    with db.read() as s:
        return list(s.exec(query))
