"""Forgetting: every row of a session, or of a user, removed in one transaction, children before parents.

Which tables hold a session's rows is read from the models' own columns (`session_id`, `turn_id`,
`message_id`, `review_id`, `user_id`), so a table added later is forgotten without a change here. The
full-text index (FTS5 tables, Postgres' message_search) follows its messages through the triggers and
foreign keys of migration 0003, in the same transaction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlalchemy import Table, delete, or_, select
from sqlmodel import Session, SQLModel

import shared.models  # noqa: F401  (registers every table in SQLModel.metadata)
from shared.db import Database
from shared.models.attachments import Attachment
from shared.models.reviews import Review
from shared.models.sessions import ChatSession, Message
from shared.models.turns import TERMINAL_STATUSES, Turn
from shared.models.users import ApiKey, User

# Full outputs the terminal kept in the workspace, named in the tool results that mention them.
OUTPUT_PATH = re.compile(r"\.hstack/outputs/([A-Za-z0-9_-]{1,64}\.log)")
_LAST = {Turn.__tablename__, ChatSession.__tablename__}
_FINISHED = {status.value for status in TERMINAL_STATUSES}


@dataclass
class Forgotten:
    """What a deletion removed (rows per table) and what lives outside the database to remove next."""

    session_ids: list[str] = field(default_factory=list)
    turn_ids: list[str] = field(default_factory=list)
    output_files: set[str] = field(default_factory=set)
    attachment_paths: set[str] = field(default_factory=set)  # files users sent, relative to their workspace
    rows: dict[str, int] = field(default_factory=dict)

    def add(self, other: "Forgotten") -> None:
        self.session_ids += other.session_ids
        self.turn_ids += other.turn_ids
        self.output_files |= other.output_files
        self.attachment_paths |= other.attachment_paths
        for table, count in other.rows.items():
            self.rows[table] = self.rows.get(table, 0) + count


def open_turn_ids(db: Database, session_id: str) -> list[str]:
    """The session's turns that are queued, running or parked: the ones to cancel before forgetting."""
    with db.read() as s:
        return list(s.scalars(select(Turn.id).where(Turn.session_id == session_id, Turn.status.not_in(_FINISHED))))


def session_ids_of(db: Database, user_id: str) -> list[str]:
    with db.read() as s:
        return list(s.scalars(select(ChatSession.id).where(ChatSession.user_id == user_id)))


def forget_session(db: Database, session_id: str) -> Forgotten:
    """Delete the session and every row that names it, its turns, messages or reviews; one transaction."""
    with db.write() as s:
        return _forget_session(s, session_id)


def forget_user(db: Database, user_id: str) -> tuple[Forgotten, list[str]]:
    """Delete every session of the user, then every row naming the user, then the user; one transaction.

    Returns what was forgotten and the hashes of the user's keys (to drop from every api's auth cache)."""
    with db.write() as s:
        forgotten = Forgotten()
        for session_id in s.scalars(select(ChatSession.id).where(ChatSession.user_id == user_id)).all():
            forgotten.add(_forget_session(s, session_id))
        key_hashes = list(s.scalars(select(ApiKey.key_hash).where(ApiKey.user_id == user_id)))
        for table in _tables_children_first():
            if "user_id" in table.c:
                _count(forgotten, table, s.execute(delete(table).where(table.c.user_id == user_id)))
        _count(forgotten, User.__table__, s.execute(delete(User).where(User.id == user_id)))
        return forgotten, key_hashes


def _forget_session(s: Session, session_id: str) -> Forgotten:
    turn_ids = select(Turn.id).where(Turn.session_id == session_id)
    keys = {
        "session_id": session_id,
        "turn_id": turn_ids,
        "message_id": select(Message.id).where(Message.session_id == session_id),
        "review_id": select(Review.id).where(Review.session_id == session_id),
    }
    forgotten = Forgotten(session_ids=[session_id], turn_ids=list(s.scalars(turn_ids)))
    for content in s.scalars(select(Message.content).where(Message.session_id == session_id,
                                                           Message.content.contains(".hstack/outputs/"))):
        forgotten.output_files.update(OUTPUT_PATH.findall(content))
    forgotten.attachment_paths.update(s.scalars(select(Attachment.path).where(Attachment.session_id == session_id)))
    for table in _tables_children_first():
        if table.name in _LAST:  # the turns subquery names them: they go after every row that refers to them
            continue
        matches = [_names(table, column, value) for column, value in keys.items() if column in table.c]
        if matches:
            _count(forgotten, table, s.execute(delete(table).where(or_(*matches))))
    _count(forgotten, Turn.__table__, s.execute(delete(Turn).where(Turn.session_id == session_id)))
    _count(forgotten, ChatSession.__table__, s.execute(delete(ChatSession).where(ChatSession.id == session_id)))
    return forgotten


def _names(table: Table, column: str, value):
    """The condition that a row of `table` names `value` (an id, or a subquery of ids) in `column`."""
    if isinstance(value, str):
        return table.c[column] == value
    return table.c[column].in_(value)


def _tables_children_first() -> list[Table]:
    """Every mapped table, a table that refers to another before the one it refers to."""
    return list(reversed(SQLModel.metadata.sorted_tables))


def _count(forgotten: Forgotten, table: Table, result) -> None:
    if result.rowcount:
        forgotten.rows[table.name] = forgotten.rows.get(table.name, 0) + result.rowcount
