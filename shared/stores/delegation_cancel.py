"""Stopping the children of a delegation inside a transaction some store already holds.

Kept apart from shared/stores/delegations.py so that cancelling a parked parent (shared/stores/turns.py) can
stop its children in the same transaction without the two stores importing each other.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import update
from sqlmodel import Session, select

from shared.models.delegations import Delegation, DelegationStatus
from shared.models.turns import PARKED_STATUSES, Turn, TurnStatus

RUNNING = DelegationStatus.running.value
PARENT_CANCELLED = "The parent turn was cancelled, so this subtask was stopped."


def stop_child_turns(s: Session, turn_ids: list[str], now: datetime, why: str) -> list[str]:
    """Flag the child turns cancelled; a queued or parked one ends now. Returns those a worker runs (to announce)."""
    if not turn_ids:
        return []
    s.execute(update(Turn).where(Turn.id.in_(turn_ids)).values(cancel_requested=True))
    s.execute(update(Turn).where(Turn.id.in_(turn_ids),
                                 Turn.status.in_((TurnStatus.queued.value, *PARKED_STATUSES)))
              .values(status=TurnStatus.cancelled.value, finished_at=now, error_code="cancelled", error_message=why))
    return list(s.scalars(select(Turn.id).where(Turn.id.in_(turn_ids), Turn.status == TurnStatus.running.value)))


def cancel_children(s: Session, parent_turn_id: str, now: datetime, why: str = PARENT_CANCELLED) -> list[str]:
    """Settle every running child of the parent as cancelled and stop its turn; returns the child turns running."""
    rows = list(s.exec(select(Delegation).where(Delegation.turn_id == parent_turn_id, Delegation.status == RUNNING)))
    for row in rows:
        row.status, row.error, row.finished_at = DelegationStatus.cancelled.value, why, now
        s.add(row)
    return stop_child_turns(s, [r.child_turn_id for r in rows if r.child_turn_id], now, why)
