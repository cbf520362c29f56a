"""Turns: accepted here, claimed by workers one at a time per session, finished exactly once.

The database is the source of truth for who runs what. A worker claims the next turn of a
session inside a write transaction that first locks the session row, so two workers never run
turns of one session at once; a claimed turn carries a heartbeat, and a turn whose heartbeat
went stale (its worker died) is claimed again by the next worker that drains the session.
"""

from __future__ import annotations

from datetime import timedelta
from functools import lru_cache
from typing import Any

from sqlalchemy import and_, bindparam, case, func, insert, literal, or_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from shared.clock import utcnow
from shared.db import Database
from shared.errors import IdempotencyConflict, InvalidState, NotFound
from shared.ids import new_id
from shared.models.approvals import Approval, ApprovalStatus
from shared.models.clarifications import Clarification, ClarificationStatus
from shared.models.sessions import ChatSession, Message
from shared.models.turns import PARKED_STATUSES, TERMINAL_STATUSES, Turn, TurnStatus
from shared.stores import attachments
from shared.stores.sessions import add_turn_messages
from shared.stores.turn_slots import as_turn, lock_user, running_elsewhere, send_for_user, take_slots, users_waiting

ACTIVE = (TurnStatus.running.value, *PARKED_STATUSES)


def create_turn(
    db: Database,
    user_id: str,
    session_id: str,
    text: str,
    *,
    idempotency_key: str | None = None,
    request_hash: str | None = None,
    interactive: bool = True,
) -> tuple[Turn, bool]:
    """Commit a queued turn (or return the one this Idempotency-Key made); True when new. Nothing is sent."""
    turn, created, _ = accept_turn(db, user_id, session_id, text, idempotency_key=idempotency_key,
                                   request_hash=request_hash, interactive=interactive)
    return turn, created


def accept_turn(
    db: Database,
    user_id: str,
    session_id: str,
    text: str,
    *,
    idempotency_key: str | None = None,
    request_hash: str | None = None,
    max_running: int | None = None,
    interactive: bool = True,
    attachment_ids: list[str] | None = None,
) -> tuple[Turn, bool, list[Turn]]:
    """create_turn, plus (with `max_running`) the user's turns its free slots send now, in the same transaction.

    `interactive=False` (the OpenAI-compatible route): nobody can be asked, so the approval gate refuses
    what would need a human instead of parking the turn. `attachment_ids` are bound to the new turn in the same
    transaction (one that is not the user's, in this session, rolls the turn back with NotFound).
    """
    try:
        with db.write() as s:
            if idempotency_key:
                existing = idempotent_turn(s, user_id, idempotency_key)
                if existing is not None:
                    return same_request(existing, request_hash), False, []
            turn, sent = add_turn(s, user_id, session_id, text, idempotency_key=idempotency_key,
                                  request_hash=request_hash, max_running=max_running, interactive=interactive)
            attachments.bind_to_turn(s, user_id, session_id, turn.id, attachment_ids or [])
        return turn, True, sent
    except IntegrityError:
        return lost_race(db, user_id, idempotency_key, request_hash), False, []


def add_turn(
    s: Session,
    user_id: str,
    session_id: str,
    text: str,
    *,
    idempotency_key: str | None = None,
    request_hash: str | None = None,
    max_running: int | None = None,
    interactive: bool = True,
    max_iterations: int | None = None,
) -> tuple[Turn, list[Turn]]:
    """Insert a queued turn inside a write transaction a store holds; with `max_running`, the turns to send now.

    The INSERT is a prebuilt statement, not an ORM flush (a third of the accept's CPU went to the flush). When the
    new turn is sent at once, the row the slot UPDATE returned (with its `enqueued_at`) is the one handed back.
    """
    postgres = s.get_bind().dialect.name == "postgresql"
    turn = Turn(
        id=new_id("turn"),
        session_id=session_id,
        user_id=user_id,
        seq=0 if postgres else _next_seq(s, user_id, session_id),
        input=text,
        idempotency_key=idempotency_key,
        request_hash=request_hash,
        interactive=interactive,
        max_iterations=max_iterations,
    )
    if postgres:  # the counter's UPDATE and the INSERT in one statement: one round trip on the POST's path
        turn.seq = _numbered(s.execute(_INSERT_NUMBERED_TURN, {
            **{f"turn_{name}": getattr(turn, name) for name in _UNNUMBERED}, **_seq_params(user_id, session_id),
        }).scalar())
    else:
        s.execute(_INSERT_TURN, {name: getattr(turn, name) for name in _TURN_COLUMNS})
    if max_running is None:
        return turn, []
    sent = take_slots(s, user_id, max_running)
    return next((t for t in sent if t.id == turn.id), turn), sent


# Statements on every turn's path are built once, on the tables rather than the ORM entities: an ORM INSERT or
# UPDATE (flush machinery, session synchronisation, the entity loaded back) costs several times what the
# database takes to run it; a Core one hands the same values to the same column types.
_TURNS = Turn.__table__
_SESSIONS = ChatSession.__table__
_INSERT_TURN = insert(_TURNS)
_TURN_COLUMNS = tuple(column.key for column in _TURNS.columns)


def lost_race(db: Database, user_id: str, idempotency_key: str | None, request_hash: str | None) -> Turn:
    """Inside `except IntegrityError`: the turn a concurrent request with the same Idempotency-Key committed
    first (re-raises when there is no key, or no such turn)."""
    if not idempotency_key:
        raise
    with db.read() as s:
        existing = idempotent_turn(s, user_id, idempotency_key)
    if existing is None:
        raise
    return same_request(existing, request_hash)


def idempotent_turn(s: Session, user_id: str, key: str) -> Turn | None:
    return s.exec(select(Turn).where(Turn.user_id == user_id, Turn.idempotency_key == key)).first()


def find_by_idempotency_key(db: Database, user_id: str, key: str) -> Turn | None:
    """The turn this user's Idempotency-Key already made, if any."""
    with db.read() as s:
        return idempotent_turn(s, user_id, key)


def same_request(turn: Turn, request_hash: str | None) -> Turn:
    if turn.request_hash != request_hash:
        raise IdempotencyConflict()
    return turn


def _next_seq(s: Session, user_id: str, session_id: str) -> int:
    """Bump the session's turn counter; the UPDATE also serialises concurrent accepts on Postgres."""
    return _numbered(s.execute(_NEXT_SEQ, _seq_params(user_id, session_id)).scalar())


def _seq_params(user_id: str, session_id: str) -> dict[str, Any]:
    return {"session": session_id, "owner": user_id, "now": utcnow()}


def _numbered(seq: int | None) -> int:
    """The turn's number in its session; None: the counter's UPDATE found no session of this user."""
    if seq is None:
        raise NotFound("No such session.", code="session_not_found")
    return seq


_NEXT_SEQ = (
    update(_SESSIONS)
    .where(_SESSIONS.c.id == bindparam("session"), _SESSIONS.c.user_id == bindparam("owner"))
    .values(turn_count=_SESSIONS.c.turn_count + 1, updated_at=bindparam("now"))
    .returning(_SESSIONS.c.turn_count)
)


def _insert_numbered_turn():
    """Postgres: the session's counter bumped and the turn inserted with it as its seq, one statement (no row,
    and no turn, when the session is not the user's)."""
    bumped = _NEXT_SEQ.cte("bumped")
    values = [bindparam(f"turn_{name}", type_=_TURNS.c[name].type) for name in _UNNUMBERED]
    return (insert(_TURNS).from_select([*_UNNUMBERED, "seq"], select(*values, bumped.c.turn_count))
            .returning(_TURNS.c.seq).add_cte(bumped))


_UNNUMBERED = tuple(name for name in _TURN_COLUMNS if name != "seq")
_INSERT_NUMBERED_TURN = _insert_numbered_turn()


def get_turn(db: Database, user_id: str | None, turn_id: str) -> Turn:
    """A turn of this user (any user when user_id is None); another user's is NotFound."""
    with db.read() as s:
        turn = s.scalars(_TURN_BY_ID, {"turn": turn_id}).first()
    if turn is None or (user_id is not None and turn.user_id != user_id):
        raise NotFound("No such turn.", code="turn_not_found")
    return turn


# Every event stream reads its turn first: a prebuilt SELECT costs ~0.1 ms less CPU than `Session.get`.
_TURN_BY_ID = select(Turn).where(Turn.id == bindparam("turn"))


def claim_next(db: Database, session_id: str, worker_id: str, lease_seconds: float,
               max_running: int = 0, *, expect_work: bool = False) -> Turn | None:
    """Claim the turn this session must run next, or None when it is busy elsewhere, idle, or its user is at the cap.

    Claiming also stores the turn's user message (position 0) in the same transaction. With
    `max_running`, a user whose turns already run with live leases in that many other sessions
    gets nothing, and the session's queued turns go back to waiting for a slot. `expect_work`: the
    caller was just sent a turn of this session, so the read-only pre-check (which spares the write
    lock when there is nothing to do) would almost always say "go on" and is skipped.
    """
    fresh_after = utcnow() - timedelta(seconds=lease_seconds)
    if not expect_work:
        with db.read() as s:  # most calls find nothing to do: answer those without taking the write lock
            if _runnable(s, session_id, fresh_after) is None:
                return None
    with db.write() as s:
        _lock_session(s, session_id)
        found = _runnable(s, session_id, fresh_after)
        if found is None:
            return None
        if max_running > 0:
            lock_user(s, found.user_id)
            if running_elsewhere(s, found.user_id, session_id, fresh_after) >= max_running:
                s.execute(update(Turn).where(Turn.session_id == session_id, Turn.status == TurnStatus.queued.value)
                          .values(enqueued_at=None))
                return None
        now = utcnow()
        if s.get_bind().dialect.name == "postgresql":  # one round trip for both
            return as_turn(s.execute(_CLAIM_STORING_INPUT, {"claimed": found.id, "claimer": worker_id, "now": now,
                                                            "stored_at": now}).one())
        turn = as_turn(s.execute(_CLAIM, {"claimed": found.id, "claimer": worker_id, "now": now}).one())
        add_turn_messages(s, session_id, [{"role": "user", "content": turn.input, "turn_id": turn.id, "turn_position": 0}])
        return turn


_CLAIM = (
    update(_TURNS)
    .where(_TURNS.c.id == bindparam("claimed"))  # names that are no column: an UPDATE reserves those
    .values(status=TurnStatus.running.value, worker_id=bindparam("claimer"), attempts=_TURNS.c.attempts + 1,
            heartbeat_at=bindparam("now"), started_at=func.coalesce(_TURNS.c.started_at, bindparam("now")))
    .returning(_TURNS)
)


def _storing(row) -> Any:
    """Postgres: a CTE inserting the message `row` selects (one value per _STORED column), as `add_turn_messages`
    would: a (turn_id, turn_position) already stored is kept. Joined to the statement whose result the row comes
    from, it saves a round trip on the turn's path."""
    return (pg_insert(_MESSAGES).from_select(_STORED, row)
            .on_conflict_do_nothing(index_elements=["turn_id", "turn_position"]).cte("stored"))


def _claim_storing_input():
    """Postgres: the claim's UPDATE and the insert of the turn's user message (position 0) in one statement."""
    claimed = _CLAIM.cte("claimed")
    row = select(claimed.c.session_id, claimed.c.id, literal(0), literal("user"), claimed.c.input, _STORED_AT)
    return select(claimed).add_cte(_storing(row))


_MESSAGES = Message.__table__
_STORED = ("session_id", "turn_id", "turn_position", "role", "content", "created_at")
_STORED_AT = bindparam("stored_at", type_=_MESSAGES.c.created_at.type)
_CLAIM_STORING_INPUT = _claim_storing_input()

# Built once (it runs twice per turn): building a statement costs more CPU than running it on SQLite.
_NEXT_UNFINISHED = (
    select(Turn.id, Turn.user_id, Turn.status, Turn.heartbeat_at)
    .where(Turn.session_id == bindparam("session_id"), Turn.status.in_((*ACTIVE, TurnStatus.queued.value)))
    .order_by(case((Turn.status == TurnStatus.queued.value, 1), else_=0), Turn.seq)
    .limit(1)
)


def _runnable(s: Session, session_id: str, fresh_after):
    """The session's running turn whose worker died, else its oldest queued turn, unless one runs live (id, user_id).

    One statement: the session's unfinished turns, active ones (running or parked) first, then by seq.
    """
    first = s.execute(_NEXT_UNFINISHED, {"session_id": session_id}).first()
    if first is None or first.status == TurnStatus.queued.value:
        return first
    stale = first.heartbeat_at is None or first.heartbeat_at < fresh_after
    return first if first.status == TurnStatus.running.value and stale else None


def _lock_session(s: Session, session_id: str) -> None:
    """Row-lock the session on Postgres (SQLite's write transaction is already exclusive)."""
    if s.get_bind().dialect.name != "sqlite":
        s.execute(_LOCK_SESSION, {"session_id": session_id}).first()


_LOCK_SESSION = select(_SESSIONS.c.id).where(_SESSIONS.c.id == bindparam("session_id")).with_for_update()


def heartbeat(db: Database, turn_ids: list[str], worker_id: str) -> set[str]:
    """Renew the lease of turns this worker runs; returns those a client asked to cancel."""
    if not turn_ids:
        return set()
    with db.write() as s:
        s.execute(
            update(Turn)
            .where(Turn.id.in_(turn_ids), Turn.worker_id == worker_id, Turn.status.in_(ACTIVE))
            .values(heartbeat_at=utcnow())
        )
        rows = s.exec(select(Turn.id).where(Turn.id.in_(turn_ids), Turn.cancel_requested.is_(True)))
        return set(rows)


def finish_turn(
    db: Database,
    turn_id: str,
    worker_id: str,
    status: TurnStatus,
    *,
    output: str | None = None,
    error_code: str | None = None,
    error_message: str | None = None,
    usage: dict[str, Any] | None = None,
    messages: list[dict[str, Any]] | None = None,
) -> bool:
    """Record the outcome and the turn's last messages in one transaction; False when this worker lost the turn."""
    values: dict[str, Any] = {"status": status.value, "finished_at": utcnow(), "output": output}
    if error_code:
        values.update(error_code=error_code, error_message=error_message)
    if usage is not None:
        values["usage"] = usage
    params = {**{f"new_{k}": v for k, v in values.items()}, "finished": turn_id, "finisher": worker_id}
    with db.write() as s:
        one = messages[0] if messages and len(messages) == 1 else None
        if s.get_bind().dialect.name == "postgresql" and one is not None and set(one) == set(_ANSWER_COLUMNS):
            return s.execute(_finish_storing_answer(tuple(values)),
                             {**params, **{f"answer_{k}": one[k] for k in _ANSWER_COLUMNS},
                              "stored_at": utcnow()}).scalar() is not None
        session_id = s.execute(_finish_statement(tuple(values)), params).scalar()
        if session_id is None:
            return False
        add_turn_messages(s, session_id, messages or [])
        return True


@lru_cache(maxsize=8)
def _finish_statement(columns: tuple[str, ...]):
    """The finishing UPDATE for this set of columns, built once per set (two or three sets exist).

    Its parameters are named after no column (`new_<column>`, `finished`, `finisher`): an UPDATE reserves those.
    """
    return (update(_TURNS)
            .where(_TURNS.c.id == bindparam("finished"), _TURNS.c.worker_id == bindparam("finisher"),
                   _TURNS.c.status.in_(ACTIVE))
            .values({column: bindparam(f"new_{column}") for column in columns})
            .returning(_TURNS.c.session_id))


_ANSWER_COLUMNS = ("turn_id", "turn_position", "role", "content")  # _STORED's, between session_id and created_at


@lru_cache(maxsize=8)
def _finish_storing_answer(columns: tuple[str, ...]):
    """Postgres: the finishing UPDATE and the insert of the turn's one last row (its answer) in one statement;
    nothing is inserted when this worker lost the turn."""
    finished = _finish_statement(columns).cte("finished")
    answer = (bindparam(f"answer_{c}", type_=_MESSAGES.c[c].type) for c in _ANSWER_COLUMNS)
    return select(finished.c.session_id).add_cte(_storing(select(finished.c.session_id, *answer, _STORED_AT)))


def request_cancel(db: Database, user_id: str, turn_id: str) -> Turn:
    """Cancel a queued turn now, or flag a running one for its worker; finished turns are a 409."""
    with db.write() as s:
        turn = s.get(Turn, turn_id)
        if turn is None or turn.user_id != user_id:
            raise NotFound("No such turn.", code="turn_not_found")
        if turn.status in {t.value for t in TERMINAL_STATUSES}:
            raise InvalidState(f"The turn is already {turn.status}.", code="turn_finished")
        turn.cancel_requested = True
        if turn.status in PARKED_STATUSES:
            _cancel_parked(s, turn)  # no worker holds it: it ends here, its question denied
        elif turn.status == TurnStatus.queued.value:
            turn.status = TurnStatus.cancelled.value
            turn.finished_at = utcnow()
            turn.error_code = "cancelled"
            turn.error_message = "Cancelled before it started."
        s.add(turn)
        return turn


def _cancel_parked(s: Session, turn: Turn) -> None:
    now = utcnow()
    s.execute(update(Approval).where(Approval.turn_id == turn.id, Approval.status == ApprovalStatus.pending.value)
              .values(status=ApprovalStatus.denied.value, decided_by="cancel", decided_at=now))
    s.execute(update(Clarification).where(Clarification.turn_id == turn.id,
                                          Clarification.status == ClarificationStatus.pending.value)
              .values(status=ClarificationStatus.expired.value, answered_at=now))
    waited_for = "an approval" if turn.status == TurnStatus.awaiting_approval.value else "an answer"
    turn.status, turn.finished_at = TurnStatus.cancelled.value, now
    turn.error_code, turn.error_message = "cancelled", f"Cancelled while waiting for {waited_for}."


def release_turn(db: Database, turn_id: str, worker_id: str) -> Turn | None:
    """Hand a running turn back (a stopping worker): queued and marked sent again, its stored progress kept."""
    with db.write() as s:
        return s.scalars(
            update(Turn)
            .where(Turn.id == turn_id, Turn.worker_id == worker_id, Turn.status == TurnStatus.running.value)
            .values(status=TurnStatus.queued.value, worker_id=None, heartbeat_at=None, enqueued_at=utcnow())
            .returning(Turn),
            execution_options={"synchronize_session": False},
        ).one_or_none()


def hand_off(db: Database, session_id: str) -> Turn | None:
    """The session's next queued turn, marked sent, when no turn of it runs live: a stopping worker re-sends it."""
    with db.write() as s:
        _lock_session(s, session_id)
        if s.exec(select(Turn.id).where(Turn.session_id == session_id, Turn.status.in_(ACTIVE))).first():
            return None
        turn = s.exec(select(Turn).where(Turn.session_id == session_id, Turn.status == TurnStatus.queued.value)
                      .order_by(Turn.seq).limit(1)).first()
        if turn is not None:
            turn.enqueued_at = utcnow()
            s.add(turn)
        return turn


def turns_to_resend(db: Database, *, requeue_after: float, lease_seconds: float, max_running: int = 0,
                    limit: int = 500) -> list[Turn]:
    """Sent turns nobody picked up, running turns whose worker died, and waiting turns a free slot allows."""
    now = utcnow()
    stale = now - timedelta(seconds=requeue_after)
    dead = now - timedelta(seconds=lease_seconds)
    busy_sessions = (
        select(Turn.session_id)
        .where(or_(Turn.status.in_(PARKED_STATUSES),
                   and_(Turn.status.in_(ACTIVE), Turn.heartbeat_at >= dead)))
        .scalar_subquery()
    )
    with db.write() as s:
        lost = s.exec(
            select(Turn)
            .where(
                Turn.status == TurnStatus.queued.value,
                Turn.created_at < stale,
                Turn.enqueued_at < stale,
                Turn.session_id.not_in(busy_sessions),
            )
            .order_by(Turn.session_id, Turn.seq)
            .limit(limit)
        ).all()
        orphans = s.exec(
            select(Turn)
            .where(
                Turn.status == TurnStatus.running.value,
                Turn.heartbeat_at < dead,
                or_(Turn.enqueued_at.is_(None), Turn.enqueued_at < dead),
            )
            .limit(limit)
        ).all()
        picked = list(orphans) + list(lost)
        for turn in picked:
            turn.enqueued_at = now
            s.add(turn)
    for user_id in users_waiting(db, stale, limit):
        picked += send_for_user(db, user_id, max_running)
    return picked


def recent_turns(db: Database, *, limit: int = 10) -> list[Turn]:
    with db.read() as s:
        return list(s.exec(select(Turn).order_by(Turn.created_at.desc()).limit(limit)))


def count_by_status(db: Database) -> dict[str, int]:
    with db.read() as s:
        rows = s.exec(select(Turn.status, func.count()).group_by(Turn.status)).all()
    return {status: count for status, count in rows}


def open_turn(db: Database, session_id: str) -> Turn | None:
    """The session's oldest turn not yet finished (queued, running or parked), if any."""
    done = [s.value for s in TERMINAL_STATUSES]
    with db.read() as s:
        return s.exec(select(Turn).where(Turn.session_id == session_id, Turn.status.not_in(done))
                      .order_by(Turn.seq).limit(1)).first()
