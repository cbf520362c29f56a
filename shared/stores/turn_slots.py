"""Per-user fairness: at most MAX_RUNNING_TURNS_PER_USER turns of one user are sent or running.

A turn holds one of its user's slots while it runs and while it is queued with `enqueued_at` set,
i.e. its task is on the broker. A turn parked for an approval holds no slot (no worker runs it), but
its session stays busy: its later turns wait until it resumes and finishes. The user's other queued turns wait in the
database; whenever a slot frees, the oldest waiting turns are sent, one per idle session, so a
burst of one user queues behind that user's own work and never fills the shared queue. Every
decision holds the user's row lock (Postgres; SQLite's write transaction is already exclusive), so
two api processes or two workers never hand out one slot twice.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, bindparam, case, func, or_, update
from sqlmodel import Session, select

from shared.clock import utcnow
from shared.db import Database
from shared.models.sessions import ChatSession
from shared.models.turns import PARKED_STATUSES, Turn, TurnStatus
from shared.models.users import User

RUNNING = TurnStatus.running.value
PARKED = PARKED_STATUSES
QUEUED = TurnStatus.queued.value
SCAN_SESSIONS = 200


def as_turn(row) -> Turn:
    """The Turn of a row that a Core statement returned with every column (what the ORM would have loaded)."""
    return Turn(**row._mapping)


def lock_user(s: Session, user_id: str) -> None:
    """Serialise slot decisions of one user on Postgres (call after any session lock: sessions, then users).

    FOR NO KEY UPDATE, because inserting a turn already holds the user row's FOR KEY SHARE lock (its
    foreign key): two accepts upgrading to FOR UPDATE would deadlock, these two locks queue instead.
    """
    if s.get_bind().dialect.name != "sqlite":
        s.execute(_LOCK_USER, {"user_id": user_id}).first()


_USERS = User.__table__
_LOCK_USER = select(_USERS.c.id).where(_USERS.c.id == bindparam("user_id")).with_for_update(key_share=True)


def running_elsewhere(s: Session, user_id: str, session_id: str, fresh_after: datetime) -> int:
    """Turns of the user running with a live lease in other sessions."""
    return s.exec(
        select(func.count()).select_from(Turn).where(
            Turn.user_id == user_id, Turn.session_id != session_id, Turn.status == RUNNING,
            Turn.heartbeat_at >= fresh_after)
    ).one()


def take_slots(s: Session, user_id: str, max_running: int) -> list[Turn]:
    """Mark the user's oldest waiting turns sent, one per idle session, as far as free slots allow (0: no cap).

    One grouped read decides (per session of the user: slots held, parked, the head of its waiting turns), then
    one prebuilt UPDATE … RETURNING per turn sent: every accept runs this, so it is kept to the fewest statements.
    """
    lock_user(s, user_id)
    rows = s.execute(_SESSIONS_OF_USER, {"user": user_id}).all()
    held = sum(row.held for row in rows)
    free = max_running - held if max_running > 0 else None
    if free is not None and free <= 0:
        return []
    waiting = sorted((row for row in rows if row.head is not None and not row.held and not row.parked),
                     key=lambda row: row.since)[:SCAN_SESSIONS]
    now = utcnow()
    return [as_turn(s.execute(_SEND, {"sent_at": now, "in_session": row.session_id, "at_seq": row.head}).one())
            for row in waiting[:free]]


_UNSENT = and_(Turn.status == QUEUED, Turn.enqueued_at.is_(None))
_SENT = and_(Turn.status == QUEUED, Turn.enqueued_at.is_not(None))
_SESSIONS_OF_USER = (
    select(Turn.session_id,
           func.sum(case((or_(Turn.status == RUNNING, _SENT), 1), else_=0)).label("held"),
           func.max(case((Turn.status.in_(PARKED), 1), else_=0)).label("parked"),
           func.min(case((_UNSENT, Turn.seq))).label("head"),
           func.min(case((_UNSENT, Turn.created_at))).label("since"))
    .where(Turn.user_id == bindparam("user"), Turn.status.in_((RUNNING, *PARKED, QUEUED)))
    .group_by(Turn.session_id)
)
# On the table, not the ORM entity: an ORM UPDATE (its session synchronisation, the entity it loads back) cost
# several times what SQLite takes to run it, on every accepted turn.
_TURNS = Turn.__table__
_SEND = (
    update(_TURNS)
    .where(_TURNS.c.session_id == bindparam("in_session"), _TURNS.c.seq == bindparam("at_seq"))
    .values(enqueued_at=bindparam("sent_at"))
    .returning(_TURNS)
)


def send_waiting(db: Database, session_id: str, max_running: int) -> list[Turn]:
    """After a session went idle here: the turns of its user to send now (marked sent; the caller enqueues them).

    Most drains find no turn of the user waiting (always so without a cap): that is answered by one read,
    without taking the write lock every other writer of the database queues on. Asked after a turn
    finished (its slot already free in the database): an accept committed before this read is seen here;
    one committed after it saw the free slot and sent its turn itself.
    """
    with db.read() as s:
        user_id = s.execute(_WAITING_USER, {"session_id": session_id}).scalar()
    if user_id is None:
        return []
    with db.write() as s:
        return take_slots(s, user_id, max_running)


# The session's user, when a queued turn of theirs was never sent (the only kind take_slots can send).
_WAITING_USER = select(Turn.user_id).where(
    Turn.user_id == select(ChatSession.user_id).where(ChatSession.id == bindparam("session_id")).scalar_subquery(),
    _UNSENT).limit(1)


def users_waiting(db: Database, created_before: datetime, limit: int = 500) -> list[str]:
    """Users with a turn waiting (never sent) since before `created_before`: the sweeper's backstop."""
    with db.read() as s:
        return list(s.exec(
            select(Turn.user_id)
            .where(_UNSENT, Turn.created_at < created_before)
            .distinct()
            .limit(limit)
        ))


def send_for_user(db: Database, user_id: str, max_running: int) -> list[Turn]:
    with db.write() as s:
        return take_slots(s, user_id, max_running)
