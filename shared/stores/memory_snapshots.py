"""What each session's model knows of the user's memory: its frozen snapshot plus the notes sent since.

The entries a system prompt shows are stored with it (`replace_known`, in the freeze's transaction); each
turn compares the live entries with what the model knows and, when they differ, the turn's user message
carries a note.
A note counts as known only once the message carrying it is stored (`api_content`), so a note lost
to a crash between building and storing it is sent again with the next turn.
"""

from __future__ import annotations

from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session, select

from shared.clock import utcnow
from shared.db import Database
from shared.models.memory import MemorySnapshot
from shared.models.sessions import Message


def _replace(insert):
    """INSERT … ON CONFLICT DO UPDATE of a session's snapshot rows, built once (a merge was a SELECT, then a write)."""
    statement = insert(MemorySnapshot.__table__)
    return statement.on_conflict_do_update(
        index_elements=["session_id", "target"],
        set_={"known": statement.excluded.known, "pending": None, "pending_turn_id": None,
              "updated_at": statement.excluded.updated_at})


_REPLACE = {"sqlite": _replace(sqlite_insert), "postgresql": _replace(pg_insert)}


def replace_known(s: Session, session_id: str, known: dict[str, list[str]]) -> None:
    """Inside a write transaction a store holds: the entries a freshly built system prompt shows, per target;
    they replace whatever the session knew before (the pending notes with it)."""
    if not known:
        return
    now = utcnow()
    rows = [{"session_id": session_id, "target": target, "known": list(entries), "pending": None,
             "pending_turn_id": None, "updated_at": now} for target, entries in known.items()]
    s.execute(_REPLACE[s.get_bind().dialect.name], rows)


def changes_to_tell(db: Database, session_id: str, turn_id: str,
                    live: dict[str, list[str]]) -> dict[str, list[str]]:
    """Per target whose live entries differ from what the model knows: the known entries.

    The live entries become this turn's pending note; a session with no snapshot yet starts
    knowing the live entries and is told nothing.
    """
    with db.read() as s:
        rows = {row.target: row for row in s.exec(select(MemorySnapshot).where(MemorySnapshot.session_id == session_id))}
        sent = _noted_turns(s, {r.pending_turn_id for r in rows.values() if r.pending_turn_id not in (None, turn_id)})
    changed: dict[str, list[str]] = {}
    updates: list[MemorySnapshot] = []
    for target, entries in live.items():
        row = rows.get(target)
        if row is None:
            updates.append(MemorySnapshot(session_id=session_id, target=target, known=list(entries)))
            continue
        known = row.pending if row.pending_turn_id in sent else row.known
        if entries != known:
            changed[target] = known
            updates.append(_with(row, known, pending=entries, turn_id=turn_id))
        elif known is not row.known:
            updates.append(_with(row, known, pending=None, turn_id=None))
    if updates:
        with db.write() as s:
            for row in updates:
                s.merge(row)
    return changed


def _noted_turns(s, turn_ids: set[str]) -> set[str]:
    """Those of these turns whose user message was stored with what the model was sent."""
    if not turn_ids:
        return set()
    query = select(Message.turn_id).where(Message.turn_id.in_(turn_ids), Message.turn_position == 0,
                                          Message.api_content.is_not(None))
    return set(s.exec(query))


def _with(row: MemorySnapshot, known: list[str], *, pending: list[str] | None, turn_id: str | None) -> MemorySnapshot:
    return MemorySnapshot(session_id=row.session_id, target=row.target, known=list(known),
                          pending=list(pending) if pending is not None else None, pending_turn_id=turn_id,
                          updated_at=utcnow())
