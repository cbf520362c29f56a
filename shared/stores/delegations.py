"""Delegations: a parent turn parks on its `delegate_task` call while child turns run, and resumes once they end.

Starting parks the parent (`running` -> `awaiting_children`, no worker held), creates each child's session
and queued turn and the rows linking them, in one transaction; the caller sends the child turns the user's
free slots allow (a lost send is re-sent by the turn sweep like any turn). A child's end is recorded on its
row by whoever sees it first (its worker, or the curator's sweep); the row that settles the call's last
child also moves the parent to `queued`, marked sent, in that same transaction, so the caller sends it
through `send_turn`. A child past its deadline, or one whose parent ended, is settled and stopped by the sweep.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import func
from sqlmodel import Session, select

from shared.clock import utcnow
from shared.db import Database
from shared.ids import new_id
from shared.models.delegations import CHILD_SOURCE, Delegation, DelegationStatus
from shared.models.sessions import ChatSession
from shared.models.turns import TERMINAL_STATUSES, Turn, TurnStatus
from shared.stores.approvals import park_running, resume_parked
from shared.stores.delegation_cancel import PARENT_CANCELLED, cancel_children, stop_child_turns
from shared.stores.turn_slots import take_slots
from shared.stores.turns import add_turn

RUNNING = DelegationStatus.running.value
REFUSED = DelegationStatus.refused.value
PARKED = TurnStatus.awaiting_children.value
ENDED = tuple(s.value for s in TERMINAL_STATUSES)
MAX_SUMMARY_CHARS = 8000
MAX_TITLE_CHARS = 80
SWEEP_LIMIT = 200


@dataclass(frozen=True)
class Task:
    """One task of a `delegate_task` call, checked: its goal and the child's first message."""

    goal: str
    text: str


@dataclass(frozen=True)
class Limits:
    max_children: int  # per parent turn, over all its calls
    max_iterations: int
    timeout_seconds: float
    max_running: int  # MAX_RUNNING_TURNS_PER_USER, for sending the children


@dataclass
class Started:
    """The call's rows (refused ones included) and the child turns to send now."""

    rows: list[Delegation]
    send: list[Turn]


@dataclass(frozen=True)
class Settled:
    """A row that just ended, and its parent turn when it was the call's last child (to send)."""

    row: Delegation
    resume: Turn | None


@dataclass
class Swept:
    settled: list[Settled] = field(default_factory=list)
    stop: list[str] = field(default_factory=list)  # child turns a worker runs, told to stop


def started_count(db: Database, parent_turn_id: str) -> int:
    """How many children the parent turn started so far (refused tasks are not children)."""
    with db.read() as s:
        return _started(s, parent_turn_id)


def _started(s: Session, parent_turn_id: str) -> int:
    return s.exec(select(func.count()).select_from(Delegation)
                  .where(Delegation.turn_id == parent_turn_id, Delegation.status != REFUSED)).one()


def start(db: Database, parent: Turn, tool_call_id: str, tasks: list[Task], worker_id: str, usage: dict | None,
          limits: Limits) -> Started | None:
    """Park the parent on the call and start its children (tasks past the cap are refused); None: lease lost."""
    now = utcnow()
    with db.write() as s:
        if not park_running(s, parent.id, worker_id, usage, PARKED):
            return None
        room = limits.max_children - _started(s, parent.id)
        rows = [_child(s, parent, tool_call_id, i, task, now, limits) if i < room
                else _refused(parent, tool_call_id, i, task, now, limits.max_children)
                for i, task in enumerate(tasks)]
        s.add_all(rows)
        send = take_slots(s, parent.user_id, limits.max_running)
    return Started(rows, send)


def _child(s: Session, parent: Turn, call_id: str, position: int, task: Task, now: datetime,
           limits: Limits) -> Delegation:
    """The child's own session and its one queued turn, unattended, with the child's own iteration budget."""
    child = ChatSession(id=new_id("ses"), user_id=parent.user_id, title=_title(task.goal), source=CHILD_SOURCE)
    s.add(child)
    s.flush()  # the turn's INSERT numbers it from this session's row
    turn, _ = add_turn(s, parent.user_id, child.id, task.text, interactive=False, max_iterations=limits.max_iterations)
    return Delegation(id=new_id("dlg"), user_id=parent.user_id, session_id=parent.session_id, turn_id=parent.id,
                      tool_call_id=call_id, position=position, goal=task.goal, child_session_id=child.id,
                      child_turn_id=turn.id, deadline_at=now + timedelta(seconds=limits.timeout_seconds),
                      created_at=now)


def _refused(parent: Turn, call_id: str, position: int, task: Task, now: datetime, cap: int) -> Delegation:
    return Delegation(id=new_id("dlg"), user_id=parent.user_id, session_id=parent.session_id, turn_id=parent.id,
                      tool_call_id=call_id, position=position, goal=task.goal, status=REFUSED,
                      error=f"Refused: a turn may start at most {cap} subtasks, and this one was past that.",
                      deadline_at=now, created_at=now, finished_at=now)


def _title(goal: str) -> str:
    line = " ".join(goal.split())
    return line if len(line) <= MAX_TITLE_CHARS else line[:MAX_TITLE_CHARS - 1] + "…"


def settle_child(db: Database, child_turn_id: str) -> Settled | None:
    """Record how the child turn ended on its row (once), resuming the parent when it was the last; None: nothing to do."""
    now = utcnow()
    with db.write() as s:
        row = s.exec(select(Delegation).where(Delegation.child_turn_id == child_turn_id, Delegation.status == RUNNING)
                     .with_for_update()).first()
        child = s.get(Turn, child_turn_id) if row is not None else None
        if row is None or child is None or child.status not in ENDED:
            return None
        _record(row, child, now)
        return Settled(row, _resume_if_last(s, row, now))


def _record(row: Delegation, child: Turn, now: datetime) -> None:
    """The child's outcome as the parent reads it: its final answer as the summary, its error if it had one."""
    status = child.status
    if status == TurnStatus.completed.value and (child.usage or {}).get("budget_exhausted"):
        status = DelegationStatus.budget_exhausted.value
    row.status, row.finished_at = status, now
    row.summary = (child.output or "")[:MAX_SUMMARY_CHARS] or None
    if status == DelegationStatus.budget_exhausted.value:
        row.error = "The subtask used its whole iteration budget; the summary is what it had when it stopped."
    elif child.error_code:
        row.error = f"{child.error_code}: {child.error_message or ''}".strip()


def _resume_if_last(s: Session, row: Delegation, now: datetime) -> Turn | None:
    """With no other child of the call still running, the parent goes back on the queue (marked sent)."""
    s.add(row)
    s.flush()
    others = s.exec(select(Delegation.id).where(Delegation.turn_id == row.turn_id,
                                                Delegation.tool_call_id == row.tool_call_id,
                                                Delegation.status == RUNNING)).first()
    return None if others is not None else resume_parked(s, row.turn_id, now, PARKED)


def results_for(db: Database, parent_turn_id: str, tool_call_id: str) -> list[Delegation] | None:
    """The call's rows in task order, once none runs any more; None when the call started none or some still run."""
    with db.read() as s:
        rows = list(s.exec(select(Delegation).where(Delegation.turn_id == parent_turn_id,
                                                    Delegation.tool_call_id == tool_call_id)
                           .order_by(Delegation.position)))
    if not rows or any(r.status == RUNNING for r in rows):
        return None
    return rows


def sweep(db: Database, now: datetime | None = None, limit: int = SWEEP_LIMIT) -> Swept:
    """The backstop: children whose turn ended unseen, children past their deadline, children of an ended parent."""
    now = now or utcnow()
    swept = Swept()
    with db.read() as s:
        ended = list(s.scalars(select(Delegation.child_turn_id).join(Turn, Turn.id == Delegation.child_turn_id)
                               .where(Delegation.status == RUNNING, Turn.status.in_(ENDED)).limit(limit)))
        late = list(s.scalars(select(Delegation.id).where(Delegation.status == RUNNING, Delegation.deadline_at <= now)
                              .limit(limit)))
        orphaned = list(s.scalars(select(Delegation.turn_id).join(Turn, Turn.id == Delegation.turn_id)
                                  .where(Delegation.status == RUNNING, Turn.status != PARKED).distinct()
                                  .limit(limit)))
    swept.settled += [d for d in (settle_child(db, turn_id) for turn_id in ended) if d is not None]
    for row_id in late:
        _time_out(db, row_id, now, swept)
    for parent_id in orphaned:
        with db.write() as s:
            parent = s.get(Turn, parent_id)
            if parent is not None and parent.status in ENDED:  # a queued or running parent is between resumes
                swept.stop += cancel_children(s, parent_id, now, "The parent turn ended, so this subtask was stopped.")
    return swept


def _time_out(db: Database, row_id: str, now: datetime, swept: Swept) -> None:
    """Settle a child past its deadline as timed out and stop its turn; the parent resumes if it was the last."""
    with db.write() as s:
        row = s.get(Delegation, row_id, with_for_update=True)
        if row is None or row.status != RUNNING:
            return
        allowed = (row.deadline_at - row.created_at).total_seconds()
        row.status, row.finished_at = DelegationStatus.timed_out.value, now
        row.error = f"The subtask did not finish within {allowed:g} seconds and was stopped."
        if row.child_turn_id:
            swept.stop += stop_child_turns(s, [row.child_turn_id], now, row.error)
        swept.settled.append(Settled(row, _resume_if_last(s, row, now)))


def children_running(db: Database, parent_turn_id: str) -> list[str]:
    """Child turns of the parent a worker still runs (after a cancel: the ones to tell at once)."""
    with db.read() as s:
        return list(s.scalars(select(Turn.id).join(Delegation, Delegation.child_turn_id == Turn.id)
                              .where(Delegation.turn_id == parent_turn_id,
                                     Turn.status == TurnStatus.running.value)))


def stopped_with_parent(db: Database, parent_turn_id: str) -> list[Delegation]:
    """The parent's children that its cancellation stopped, in task order (to announce)."""
    with db.read() as s:
        return list(s.exec(select(Delegation).where(Delegation.turn_id == parent_turn_id,
                                                    Delegation.status == DelegationStatus.cancelled.value,
                                                    Delegation.error == PARENT_CANCELLED)
                           .order_by(Delegation.position)))
