"""Sessions and their transcripts."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from itertools import groupby
from typing import Any, Callable, NamedTuple

from sqlalchemy import BigInteger, and_, bindparam, exists, func, literal, or_, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session, select

from shared.clock import utcnow
from shared.db import Database
from shared.errors import InvalidInput, NotFound
from shared.ids import new_id
from shared.models.attachments import Attachment
from shared.models.compactions import APPLIED, Compaction
from shared.models.sessions import ChatSession, Message
from shared.stores import memory_snapshots

STATEMENT_BYTES = 64 * 1024 * 1024  # the JSON one bulk INSERT carries at most (Postgres: 1 GB a value)


def create_session(
    db: Database, user_id: str, *, title: str | None = None, source: str = "api", instructions: str | None = None
) -> ChatSession:
    row = ChatSession(id=new_id("ses"), user_id=user_id, title=title, source=source, instructions=instructions)
    with db.write() as s:
        s.add(row)
    return row


def session_titles(db: Database, user_id: str, session_ids: set[str]) -> dict[str, str | None]:
    """The titles of those of these sessions that are the user's, in one read."""
    if not session_ids:
        return {}
    with db.read() as s:
        rows = s.exec(select(ChatSession.id, ChatSession.title)
                      .where(ChatSession.user_id == user_id, ChatSession.id.in_(session_ids))).all()
    return dict(rows)


def get_session(db: Database, user_id: str | None, session_id: str) -> ChatSession:
    """A session of this user (any user when user_id is None); another user's is NotFound."""
    with db.read() as s:
        row = s.get(ChatSession, session_id)
    if row is None or (user_id is not None and row.user_id != user_id):
        raise NotFound("No such session.", code="session_not_found")
    return row


def set_title(db: Database, user_id: str, session_id: str, title: str | None) -> ChatSession:
    """Retitle a session of this user (a user's title is never overwritten by an automatic one)."""
    get_session(db, user_id, session_id)
    with db.write() as s:
        s.execute(update(ChatSession).where(ChatSession.id == session_id).values(title=title, updated_at=utcnow()))
        return s.get(ChatSession, session_id)


def set_title_if_unset(db: Database, session_id: str, title: str) -> bool:
    """Give an untitled session this title; False when it has one (set meanwhile, e.g. by PATCH)."""
    with db.write() as s:
        done = s.execute(update(ChatSession).where(ChatSession.id == session_id, ChatSession.title.is_(None))
                         .values(title=title))
        return done.rowcount == 1


def list_sessions(db: Database, user_id: str, *, cursor: str | None, limit: int) -> tuple[list[ChatSession], str | None]:
    """Newest first by creation time (ids only order by millisecond); the cursor is the last id of a page."""
    query = select(ChatSession).where(ChatSession.user_id == user_id)
    with db.read() as s:
        if cursor:
            last = s.get(ChatSession, cursor)
            if last is None or last.user_id != user_id:
                raise InvalidInput("Unknown cursor: pass back the next_cursor of the previous page.",
                                   code="invalid_cursor")
            query = query.where(or_(ChatSession.created_at < last.created_at,
                                    and_(ChatSession.created_at == last.created_at, ChatSession.id < last.id)))
        query = query.order_by(ChatSession.created_at.desc(), ChatSession.id.desc()).limit(limit + 1)
        rows = list(s.exec(query))
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (rows[-1].id if more and rows else None)


def freeze_system_prompt(db: Database, session_id: str, prompt: str,
                         known: dict[str, list[str]] | None = None) -> ChatSession:
    """Store the session's system prompt once; the first writer wins and later calls read it back.

    `known`: the memory entries the prompt shows, per target, recorded as what the session knows in the
    same transaction (one write for a session's start, not three) and only when this prompt won, so the
    record always matches the frozen text.
    """
    digest = hashlib.sha256(prompt.encode()).hexdigest()
    with db.write() as s:
        frozen = s.scalars(_FREEZE, {"frozen": session_id, "prompt": prompt, "digest": digest},
                           execution_options={"synchronize_session": False}).one_or_none()
        if frozen is None:  # another attempt froze its prompt first: that one stays
            return s.get(ChatSession, session_id)
        memory_snapshots.replace_known(s, session_id, known or {})
        return frozen


_FREEZE = (update(ChatSession)
           .where(ChatSession.id == bindparam("frozen"), ChatSession.system_prompt.is_(None))
           .values(system_prompt=bindparam("prompt"), system_prompt_sha256=bindparam("digest"))
           .returning(ChatSession))


def append_messages(db: Database, session_id: str, messages: list[dict[str, Any]]) -> list[Message]:
    """Store messages in order; a (turn_id, turn_position) already stored is skipped, not duplicated."""
    with db.write() as s:
        return insert_messages(s, session_id, messages)


def insert_messages(s: Session, session_id: str, messages: list[dict[str, Any]]) -> list[Message]:
    """`append_messages` inside a write transaction a store already holds."""
    stored: list[Message] = []
    for data in messages:
        row = Message(session_id=session_id, **data)
        if row.turn_id is not None and row.turn_position is not None:
            existing = s.exec(
                select(Message).where(Message.turn_id == row.turn_id, Message.turn_position == row.turn_position)
            ).first()
            if existing is not None:
                stored.append(existing)
                continue
        s.add(row)
        s.flush()
        stored.append(row)
    s.execute(update(ChatSession).where(ChatSession.id == session_id).values(updated_at=utcnow()))
    return stored


# Built once: a statement built per call costs more CPU (construction and its cache key) than running it.
_ADD_KEYED = {dialect: insert(Message.__table__).on_conflict_do_nothing(index_elements=["turn_id", "turn_position"])
              for dialect, insert in (("sqlite", sqlite_insert), ("postgresql", pg_insert))}


def add_turn_messages(s: Session, session_id: str, rows: list[dict[str, Any]]) -> None:
    """Insert a turn's keyed rows, in order; a (turn_id, turn_position) already stored is left as it is.

    Consecutive rows naming the same columns go in one executemany of the prebuilt statement; a column a
    row leaves out keeps its default, as with a row inserted alone.
    """
    if not rows:
        return
    now = utcnow()
    values = [{"session_id": session_id, "created_at": now, **row} for row in rows]
    statement = _ADD_KEYED[s.get_bind().dialect.name]
    for _, group in groupby(values, key=lambda row: tuple(row)):
        s.execute(statement, list(group))


def set_api_content(db: Database, message_id: int, text: str) -> str:
    """Record what the model is sent for a message, once; returns the stored text (the first writer wins)."""
    with db.write() as s:
        stored = s.execute(
            update(Message).where(Message.id == message_id, Message.api_content.is_(None)).values(api_content=text)
            .returning(Message.api_content)
        ).scalar()
        if stored is None:  # another attempt recorded it first: that text wins
            stored = s.exec(select(Message.api_content).where(Message.id == message_id)).one()
        return stored


# Bound as BIGINT: on Postgres the id column is INTEGER, and a larger cursor must mean "after all".
_MESSAGES_AFTER = (select(Message)
                   .where(Message.session_id == bindparam("session_id"),
                          Message.id > bindparam("after", type_=BigInteger()))
                   .order_by(Message.id))


def list_messages(db: Database, session_id: str, *, after: int | None = None, limit: int | None = None) -> list[Message]:
    if after is not None and limit is None:  # every turn's transcript read: the statement is built once
        with db.read() as s:
            return list(s.exec(_MESSAGES_AFTER, params={"session_id": session_id, "after": after}))
    query = select(Message).where(Message.session_id == session_id)
    if after is not None:
        # Bound as BIGINT: on Postgres the id column is INTEGER, and a larger cursor must mean "after all".
        query = query.where(Message.id > literal(after, BigInteger()))
    query = query.order_by(Message.id)
    if limit is not None:
        query = query.limit(limit)
    with db.read() as s:
        return list(s.exec(query))


ANALYZE_AFTER_ROWS = 10_000  # a bulk load at least this large refreshes Postgres' statistics at once
ANALYZED_AFTER_BULK = ("sessions", "messages", "message_search")
VACUUMED_AFTER_BULK = ("messages", "message_search")


def bulk_insert_messages(db: Database, rows: list[dict[str, Any]], *, batch: int = 20_000) -> int:
    """Store many messages fast (imports, benchmarks): one insert per `batch` rows, each batch its own
    transaction. Every row names its `session_id`; the search index triggers run as for any insert.
    Returns how many rows were stored."""
    now = utcnow()
    stored = 0
    for start in range(0, len(rows), batch):
        chunk = [{"created_at": now, **row} for row in rows[start:start + batch]]
        with db.write() as s:
            if db.is_sqlite:
                s.execute(Message.__table__.insert(), chunk)
            else:
                _insert_as_json(s, chunk)
            touched = {row["session_id"] for row in chunk}
            s.execute(update(ChatSession).where(ChatSession.id.in_(touched)).values(updated_at=now))
        stored += len(chunk)
    if stored >= ANALYZE_AFTER_ROWS and not db.is_sqlite:
        _refresh_statistics(db)
    return stored


def _refresh_statistics(db: Database) -> None:
    """ANALYZE what a bulk load grew, as Postgres' docs advise after loading: autovacuum refreshes the
    planner's statistics only later, and until then it plans a 100,000-message history as if it held a
    few hundred rows. Measured: the recall search's newest-first walk sorted the user's every message
    on disk (430 ms per search) instead of reading its index backwards (30 ms).

    The message tables are vacuumed too (VACUUM cannot run in a transaction: autocommit): it moves the
    GIN indexes' pending lists (up to 4 MB of the latest rows, which every GIN search reads through,
    ~2 ms a search) into the indexes, and marks the pages all-visible, so a count of matches reads the
    index without fetching each row (a heavy user's question at 100k: counts 2.3 -> 1.1 ms each, p95
    41 -> 32 ms). 0.5 s after a 90,000-message load, ~4 s after 900,000."""
    with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for table in ANALYZED_AFTER_BULK:
            conn.execute(text(f"VACUUM (ANALYZE) {table}" if table in VACUUMED_AFTER_BULK else f"ANALYZE {table}"))


def _insert_as_json(s: Session, rows: list[dict[str, Any]]) -> None:
    """Insert the rows in one statement (Postgres): the index trigger runs once per statement (0018),
    and an executemany is one statement per row. The rows travel as one JSON array typed by the table;
    an array past STATEMENT_BYTES is split over several statements (Postgres takes no value over 1 GB)."""
    names = list(dict.fromkeys(name for row in rows for name in row))
    unknown = [name for name in names if name not in Message.__table__.c]
    if unknown:
        raise ValueError(f"messages has no column {unknown[0]!r}")
    listed = ", ".join(names)
    insert = text(f"INSERT INTO messages ({listed}) SELECT {listed} "
                  "FROM json_populate_recordset(CAST(NULL AS messages), CAST(:rows AS json))")
    encoded = [json.dumps(row, default=_json_value) for row in rows]  # ASCII: characters are bytes
    start, size = 0, 0
    for i, item in enumerate(encoded):
        if i > start and size + len(item) > STATEMENT_BYTES:
            s.execute(insert, {"rows": "[" + ",".join(encoded[start:i]) + "]"})
            start, size = i, 0
        size += len(item) + 1
    s.execute(insert, {"rows": "[" + ",".join(encoded[start:]) + "]"})


def _json_value(value: Any) -> str:
    """A datetime as ISO text in UTC (a naive one is UTC, as UTCDateTime stores it)."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).isoformat()
    raise TypeError(f"a message column cannot hold {type(value).__name__}")


_TURN_MESSAGES = select(Message).where(Message.turn_id == bindparam("turn_id")).order_by(Message.turn_position)


def turn_messages(db: Database, turn_id: str) -> list[Message]:
    with db.read() as s:
        return list(s.exec(_TURN_MESSAGES, params={"turn_id": turn_id}))


def count_sessions(db: Database) -> int:
    with db.read() as s:
        return s.exec(select(func.count()).select_from(ChatSession)).one()


def _set_system_prompt(s: Session, session_id: str, prompt: str) -> str:
    """Replace a session's frozen system prompt; returns its sha256 (context compression is the one caller)."""
    digest = hashlib.sha256(prompt.encode()).hexdigest()
    s.execute(update(ChatSession).where(ChatSession.id == session_id)
              .values(system_prompt=prompt, system_prompt_sha256=digest))
    return digest


class TurnStart(NamedTuple):
    """What a turn reads before its first model call: its session, the messages after a known one, the compaction,
    and whether the turn carries files (most do not, and then read no attachments)."""

    session: ChatSession
    messages: list[Message]
    compaction: Compaction | None
    has_files: bool = False


def turn_start(db: Database, session_id: str, after: int | None,
               session_read: Callable[[ChatSession], None] | None = None, turn_id: str | None = None) -> TurnStart:
    """The session row, its messages after id `after` (all of them when None) and its latest compaction, read
    together: one transaction where a turn used to open three before its first model call.

    `session_read(session)` is called as soon as the session row is read, before the rest: the turn starts its
    background work there (the recall search), which then overlaps these reads too."""
    with db.read() as s:
        found = s.execute(_SESSION_STARTING, {"session_id": session_id, "turn_id": turn_id}).first()
        if found is None:
            raise NotFound("No such session.", code="session_not_found")
        session, compaction_id, has_files = found
        if session_read is not None:
            session_read(session)
        if after is None:
            messages = list(s.exec(_MESSAGES_ALL, params={"session_id": session_id}))
        else:
            messages = list(s.exec(_MESSAGES_AFTER, params={"session_id": session_id, "after": after}))
        compaction = None if compaction_id is None else s.get(Compaction, compaction_id)
    return TurnStart(session, messages, compaction, bool(has_files))


def latest_compaction(db: Database, session_id: str) -> Compaction | None:
    """The compaction that shapes the session's working context now, if any."""
    with db.read() as s:
        return s.exec(_LATEST_COMPACTION, params={"session_id": session_id}).first()


_MESSAGES_ALL = select(Message).where(Message.session_id == bindparam("session_id")).order_by(Message.id)


def _latest_applied(what, session_id):
    """`what` of a session's newest applied compaction."""
    return (select(what).where(Compaction.session_id == session_id, Compaction.outcome.in_(APPLIED))
            .order_by(Compaction.id.desc()).limit(1))


_LATEST_COMPACTION = _latest_applied(Compaction, bindparam("session_id"))
# The session with the id of its latest applied compaction and whether the turn has files, one statement: most
# sessions were never compacted and most turns carry no file, and those read neither (on Postgres each statement
# is a round trip).
_SESSION_STARTING = (select(ChatSession, _latest_applied(Compaction.id, ChatSession.id).scalar_subquery(),
                            exists().where(Attachment.turn_id == bindparam("turn_id")))
                     .where(ChatSession.id == bindparam("session_id")))


def recent_compaction_attempts(db: Database, session_id: str, limit: int) -> list[Compaction]:
    """The session's last compaction attempts, newest first, whatever their outcome."""
    query = select(Compaction).where(Compaction.session_id == session_id).order_by(Compaction.id.desc()).limit(limit)
    with db.read() as s:
        return list(s.exec(query))


def record_compaction(db: Database, compaction: Compaction, system_prompt: str | None = None,
                      known: dict[str, list[str]] | None = None) -> Compaction:
    """Store a compaction attempt; a rebuilt system prompt replaces the session's in the same transaction,
    and `known` (the memory entries the rebuilt prompt shows) becomes what the session knows."""
    with db.write() as s:
        memory_snapshots.replace_known(s, compaction.session_id, known or {})
        if system_prompt is not None:
            compaction.system_prompt_sha256 = _set_system_prompt(s, compaction.session_id, system_prompt)
        s.add(compaction)
        s.flush()
        return compaction


def claim_end(db: Database, session_id: str) -> ChatSession | None:
    """Mark the session ended; the session when this call ended it, None when it had already ended (or is gone)."""
    with db.write() as s:
        done = s.execute(update(ChatSession).where(ChatSession.id == session_id, ChatSession.ended_at.is_(None))
                         .values(ended_at=utcnow()))
        return s.get(ChatSession, session_id) if done.rowcount == 1 else None


def idle_session_ids(db: Database, idle_before: datetime, limit: int) -> list[str]:
    """Sessions not ended whose last activity is older than `idle_before`, oldest first."""
    last = func.coalesce(ChatSession.updated_at, ChatSession.created_at)
    with db.read() as s:
        return list(s.exec(select(ChatSession.id).where(ChatSession.ended_at.is_(None), last < idle_before)
                           .order_by(last).limit(limit)).all())
