"""Background reviews: counting turns toward the next review, claiming one per session, recording its work.

- `count_turn` runs after every finished turn: it moves the session's counters and, when a review is
  due, commits it (status queued) in the same transaction; the caller enqueues its id afterwards.
  A review whose send was lost (or whose reviewer died) is handed back the same way, to be sent again.
- `claim_next` gives a worker the session's next review under a lease with a heartbeat (like turns):
  while one review of a session runs live, no other review of that session is claimed.
- Every step of a running review is written only while its worker still holds the lease; a worker
  that lost it gets LeaseLost and stops. Each tool call is written before it runs (`start_call`,
  unique per review and index) and again with its result, so a redelivered review never runs a
  call twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import bindparam, func, or_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from shared.clock import utcnow
from shared.db import Database
from shared.ids import new_id
from shared.models.compactions import APPLIED, Compaction
from shared.models.reviews import CallOutcome, Review, ReviewCall, ReviewCounter, ReviewStatus, ReviewTrigger
from shared.models.sessions import Message
from shared.models.turns import Turn

RUNNING = ReviewStatus.running.value
QUEUED = ReviewStatus.queued.value


class LeaseLost(Exception):
    """This worker no longer holds the review (another worker took it over, or it finished)."""


@dataclass(frozen=True)
class TurnCount:
    """What one finished turn adds to its session's counters."""

    session_id: str
    turn_id: str
    seq: int
    iterations: int  # model calls of the turn's loop
    memory_written: bool
    iterations_after_skill_write: int | None  # None: the turn made no skill write
    completed: bool  # only a turn that ended with an answer can make a review due


@dataclass(frozen=True)
class Intervals:
    memory: int
    skill: int


def count_turn(db: Database, count: TurnCount, intervals: Intervals, system_prompt: str,
               lease_seconds: float) -> Review | None:
    """Add a finished turn to its session's counters; returns the review to send now (committed, queued).

    That is the review this turn made due or, failing that, one of the session's reviews that a lost
    send or a dead reviewer left behind (nobody claimed or renewed it for `lease_seconds`).
    """
    with db.write() as s:
        counter = _counter_row(s, count.session_id)
        if count.seq <= counter.last_turn_seq:
            return None  # already counted
        memory = 0 if count.memory_written else counter.turns_since_memory + 1
        skill = (count.iterations_after_skill_write if count.iterations_after_skill_write is not None
                 else counter.iterations_since_skill + count.iterations)
        trigger = _due(memory, skill, intervals) if count.completed else None
        if trigger in (ReviewTrigger.memory, ReviewTrigger.both):
            memory = 0
        if trigger in (ReviewTrigger.skill, ReviewTrigger.both):
            skill = 0
        s.execute(_SET_COUNTER, {"counted": count.session_id, "seq": count.seq, "memory": memory, "skill": skill,
                                 "now": utcnow()})
        if trigger is None:
            return _left_behind(s, count.session_id, lease_seconds)
        return _new_review(s, count, trigger, system_prompt)


def _due(turns_since_memory: int, iterations_since_skill: int, intervals: Intervals) -> ReviewTrigger | None:
    memory = intervals.memory > 0 and turns_since_memory >= intervals.memory
    skill = intervals.skill > 0 and iterations_since_skill >= intervals.skill
    if memory and skill:
        return ReviewTrigger.both
    if memory:
        return ReviewTrigger.memory
    return ReviewTrigger.skill if skill else None


def _new_review(s: Session, count: TurnCount, trigger: ReviewTrigger, system_prompt: str) -> Review:
    """The review of the conversation as it stood when the turn finished: its answer and its compaction."""
    turn = s.get(Turn, count.turn_id)
    through = s.exec(select(func.max(Message.id)).where(Message.turn_id == count.turn_id)).one()
    compaction = s.exec(
        select(Compaction.id)
        .where(Compaction.session_id == count.session_id, Compaction.outcome.in_(APPLIED),
               Compaction.created_at <= (turn.finished_at or utcnow()))
        .order_by(Compaction.id.desc()).limit(1)
    ).first()
    now = utcnow()
    review = Review(id=new_id("rev"), session_id=count.session_id, user_id=turn.user_id, turn_id=turn.id,
                    trigger=trigger.value, through_message_id=through, compaction_id=compaction,
                    system_prompt=system_prompt, created_at=now, enqueued_at=now)
    s.add(review)
    return review


# Built once: every finished turn runs them, and building a statement costs more CPU than running it. The
# counter is read and written on its table (Core): an ORM load and flush cost several times the statements.
_COUNTERS = ReviewCounter.__table__
_COUNTER = select(ReviewCounter).where(ReviewCounter.session_id == bindparam("session_id")).with_for_update()
_COUNTER_ROW = select(_COUNTERS).where(_COUNTERS.c.session_id == bindparam("session_id")).with_for_update()
_NEW_COUNTER = {dialect: insert(ReviewCounter.__table__).on_conflict_do_nothing(index_elements=["session_id"])
                for dialect, insert in (("sqlite", sqlite_insert), ("postgresql", pg_insert))}
_SET_COUNTER = (update(_COUNTERS).where(_COUNTERS.c.session_id == bindparam("counted"))
                .values(last_turn_seq=bindparam("seq"), turns_since_memory=bindparam("memory"),
                        iterations_since_skill=bindparam("skill"), updated_at=bindparam("now")))


def _create_counter(s: Session, session_id: str) -> None:
    s.execute(_NEW_COUNTER[s.get_bind().dialect.name],
              {"session_id": session_id, "turns_since_memory": 0, "iterations_since_skill": 0, "last_turn_seq": 0,
               "updated_at": utcnow()})


def _locked_counter(s: Session, session_id: str) -> ReviewCounter:
    """The session's counter row, created if missing and row-locked on Postgres.

    Read first: only a session's first finished turn finds no row, so the others skip the insert.
    """
    key = {"session_id": session_id}
    counter = s.exec(_COUNTER, params=key).first()
    if counter is not None:
        return counter
    _create_counter(s, session_id)
    return s.exec(_COUNTER, params=key).one()


def _counter_row(s: Session, session_id: str):
    """`_locked_counter` as a plain row (turns_since_memory, iterations_since_skill, last_turn_seq, …)."""
    key = {"session_id": session_id}
    row = s.execute(_COUNTER_ROW, key).first()
    if row is not None:
        return row
    _create_counter(s, session_id)
    return s.execute(_COUNTER_ROW, key).one()


def counters(db: Database, session_id: str) -> ReviewCounter | None:
    with db.read() as s:
        return s.get(ReviewCounter, session_id)


def _left_behind(s: Session, session_id: str, lease_seconds: float) -> Review | None:
    """The session's oldest review nobody claimed or renewed for `lease_seconds`, marked as sent again now."""
    now = utcnow()
    stale = now - timedelta(seconds=lease_seconds)
    review = s.exec(_LEFT_BEHIND, params={"session_id": session_id, "stale": stale}).first()
    if review is not None:
        review.enqueued_at = now
        s.add(review)
    return review


_LEFT_BEHIND = (
    select(Review)
    .where(Review.session_id == bindparam("session_id"), or_(Review.status == QUEUED, Review.status == RUNNING),
           or_(Review.heartbeat_at.is_(None), Review.heartbeat_at < bindparam("stale")),
           or_(Review.enqueued_at.is_(None), Review.enqueued_at < bindparam("stale")))
    .order_by(Review.created_at, Review.id).limit(1)
)


def reviews_to_resend(db: Database, lease_seconds: float, limit: int = 500) -> list[Review]:
    """Reviews of any session nobody claimed or renewed for `lease_seconds` (a lost send, a dead reviewer).

    Each is marked as sent again now, so the next sweep leaves it alone for another lease.
    """
    stale = utcnow() - timedelta(seconds=lease_seconds)
    with db.write() as s:
        picked = s.exec(
            select(Review)
            .where(or_(Review.status == QUEUED, Review.status == RUNNING),
                   or_(Review.heartbeat_at.is_(None), Review.heartbeat_at < stale),
                   or_(Review.enqueued_at.is_(None), Review.enqueued_at < stale),
                   Review.created_at < stale)
            .order_by(Review.created_at, Review.id).limit(limit)
        ).all()
        now = utcnow()
        for review in picked:
            review.enqueued_at = now
            s.add(review)
        return list(picked)


def claim_next(db: Database, session_id: str, worker_id: str, lease_seconds: float) -> Review | None:
    """Claim the session's next review, or None when one runs live elsewhere or none is waiting."""
    fresh_after = utcnow() - timedelta(seconds=lease_seconds)
    with db.read() as s:  # most calls find nothing to do: answer those without taking the write lock
        if _runnable(s, session_id, fresh_after) is None:
            return None
    with db.write() as s:
        _locked_counter(s, session_id)  # serialises claims of one session on Postgres
        found = _runnable(s, session_id, fresh_after)
        if found is None:
            return None
        now = utcnow()
        return s.scalars(
            update(Review)
            .where(Review.id == found)
            .values(status=RUNNING, worker_id=worker_id, attempts=Review.attempts + 1, heartbeat_at=now,
                    started_at=func.coalesce(Review.started_at, now))
            .returning(Review),
            execution_options={"synchronize_session": False},
        ).one()


def _runnable(s: Session, session_id: str, fresh_after) -> str | None:
    """The id of a running review whose worker died, else of the oldest queued one, unless one runs live."""
    running = s.exec(select(Review.id, Review.heartbeat_at)
                     .where(Review.session_id == session_id, Review.status == RUNNING).limit(1)).first()
    if running is not None:
        stale = running.heartbeat_at is None or running.heartbeat_at < fresh_after
        return running.id if stale else None
    return s.exec(select(Review.id).where(Review.session_id == session_id, Review.status == QUEUED)
                  .order_by(Review.created_at, Review.id).limit(1)).first()


def heartbeat(db: Database, review_id: str, worker_id: str) -> bool:
    """Renew the lease; False when this worker no longer holds the review."""
    with db.write() as s:
        result = s.execute(update(Review).where(*_held(review_id, worker_id)).values(heartbeat_at=utcnow()))
        return result.rowcount == 1


def release(db: Database, review_id: str, worker_id: str) -> None:
    """Give the lease up now (a retry after a database or broker blip may claim it at once)."""
    with db.write() as s:
        s.execute(update(Review).where(*_held(review_id, worker_id)).values(heartbeat_at=None))


def _held(review_id: str, worker_id: str) -> tuple:
    return Review.id == review_id, Review.worker_id == worker_id, Review.status == RUNNING


def _owned(s: Session, review_id: str, worker_id: str) -> Review:
    review = s.exec(select(Review).where(*_held(review_id, worker_id)).with_for_update()).first()
    if review is None:
        raise LeaseLost(review_id)
    return review


def record_model_call(db: Database, review_id: str, worker_id: str, message: dict[str, Any],
                      prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> None:
    """Keep one answer of the review's model on the review, with what it cost (and how much the cache served)."""
    with db.write() as s:
        review = _owned(s, review_id, worker_id)
        review.messages = [*review.messages, message]
        review.model_calls += 1
        review.prompt_tokens += prompt_tokens
        review.cached_tokens += cached_tokens
        review.completion_tokens += completion_tokens
        review.heartbeat_at = utcnow()
        s.add(review)


def ledger(db: Database, review_id: str) -> list[ReviewCall]:
    """The review's tool calls, in call order."""
    with db.read() as s:
        return list(s.exec(select(ReviewCall).where(ReviewCall.review_id == review_id)
                           .order_by(ReviewCall.call_index)))


def start_call(db: Database, review_id: str, worker_id: str, index: int, tool_call_id: str, name: str,
               arguments: str) -> None:
    """Write a call down before it runs; LeaseLost when another worker holds the review or wrote it first."""
    try:
        with db.write() as s:
            _owned(s, review_id, worker_id)
            s.add(ReviewCall(review_id=review_id, call_index=index, tool_call_id=tool_call_id[:128],
                             name=name[:128], arguments=arguments))
    except IntegrityError as exc:
        raise LeaseLost(review_id) from exc


def finish_call(db: Database, review_id: str, worker_id: str, index: int, outcome: CallOutcome, result: str,
                message: dict[str, Any], resets: str | None = None) -> None:
    """Record a call's result and its tool message together; a write resets its counter ("memory" or "skill").

    Only what came before the review's own turn is reset: turns the session finished after the review
    was triggered still count toward the next one.
    """
    now = utcnow()
    with db.write() as s:
        review = _owned(s, review_id, worker_id)
        s.execute(update(ReviewCall).where(ReviewCall.review_id == review_id, ReviewCall.call_index == index)
                  .values(outcome=outcome.value, result=result, finished_at=now))
        review.messages = [*review.messages, message]
        review.heartbeat_at = now
        s.add(review)
        if resets is not None:
            counter = _locked_counter(s, review.session_id)
            since = max(0, counter.last_turn_seq - s.get(Turn, review.turn_id).seq)
            if resets == "memory":
                counter.turns_since_memory = min(counter.turns_since_memory, since)
            elif review.trigger == ReviewTrigger.memory.value:
                # Its skill iterations were not reset when it was triggered; which came after is not
                # known, so only a session with no turn since loses them.
                counter.iterations_since_skill = counter.iterations_since_skill if since else 0
            counter.updated_at = now
            s.add(counter)


def finish_review(db: Database, review_id: str, worker_id: str, status: ReviewStatus, *, summary: str | None = None,
                  error_code: str | None = None, error_message: str | None = None) -> bool:
    """Record how the review ended; False when this worker no longer held it."""
    with db.write() as s:
        result = s.execute(update(Review).where(*_held(review_id, worker_id)).values(
            status=status.value, summary=summary, error_code=error_code, error_message=error_message,
            finished_at=utcnow()))
        return result.rowcount == 1


def get_review(db: Database, review_id: str) -> Review | None:
    with db.read() as s:
        return s.get(Review, review_id)


def compaction_of(db: Database, review: Review) -> Compaction | None:
    """The compaction that shaped the conversation the review looks at."""
    if review.compaction_id is None:
        return None
    with db.read() as s:
        return s.get(Compaction, review.compaction_id)


def list_reviews(db: Database, user_id: str, *, session_id: str | None = None,
                 limit: int = 20) -> list[tuple[Review, list[ReviewCall]]]:
    """The user's reviews, newest first, each with its tool calls in order."""
    query = select(Review).where(Review.user_id == user_id)
    if session_id is not None:
        query = query.where(Review.session_id == session_id)
    with db.read() as s:
        rows = list(s.exec(query.order_by(Review.created_at.desc(), Review.id.desc()).limit(limit)))
        calls: dict[str, list[ReviewCall]] = {r.id: [] for r in rows}
        if rows:
            for call in s.exec(select(ReviewCall).where(ReviewCall.review_id.in_(list(calls)))
                               .order_by(ReviewCall.review_id, ReviewCall.call_index)):
                calls[call.review_id].append(call)
    return [(r, calls[r.id]) for r in rows]
