"""Search at scale: bulk imports are indexed exactly like single inserts, and migration 0016 carries an
existing database's index over (and back) on both backends."""

from __future__ import annotations

import uuid

import pytest
from alembic import command
from sqlalchemy import text

from shared.db import Database
from shared.migrate import alembic_config, upgrade
from shared.stores import sessions
from shared.stores.search import search_messages
from tests.support.factories import make_session, make_user


def _index_rows(db: Database, user_id: str) -> dict:
    """The user's search index as stored: per message its context ids and document (and length, owner)."""
    mine = "IN (SELECT m.id FROM messages AS m JOIN sessions AS s ON s.id = m.session_id WHERE s.user_id = :u)"
    with db.read() as s:
        if db.is_sqlite:
            sql = f"SELECT rowid, prev_id, prev2_id, body, prev, prev2 FROM messages_fts WHERE rowid {mine}"
        else:
            sql = ("SELECT message_id, prev_id, prev2_id, doc_len, document::text, user_id FROM message_search "
                   f"WHERE message_id {mine}")
        rows = s.execute(text(sql), {"u": user_id}).all()
    return {r[0]: tuple(r[1:]) for r in rows}


def test_a_bulk_import_is_indexed_as_if_each_message_were_stored_alone(db):
    """Across batch boundaries a message's context is the two messages before it, whichever batch held them."""
    user = make_user(db)
    first, second = make_session(db, user.id), make_session(db, user.id)
    sessions.append_messages(db, first.id, [{"role": "user", "content": "Where did the heron nest?"}])
    rows = []
    for i in range(9):
        for chat in (first, second):
            rows.append({"session_id": chat.id, "role": "assistant" if i % 2 else "user",
                         "content": f"Reply {i}: the heron nested by the old mill, number {i}."})
    rows.insert(3, {"session_id": first.id, "role": "tool", "content": "tool output, not indexed"})
    sessions.bulk_insert_messages(db, rows, batch=4)
    bulk = _index_rows(db, user.id)

    with db.write() as s:  # re-index the messages one at a time, through the per-row triggers
        s.execute(text("UPDATE messages SET content = content WHERE session_id IN (:a, :b)"),
                  {"a": first.id, "b": second.id})
    assert _index_rows(db, user.id) == bulk
    assert len(bulk) == 19  # the tool output is not indexed
    hits = search_messages(db, user.id, "heron nest", limit=50)
    assert {h.session_id for h in hits} == {first.id, second.id}



def test_migration_0016_keeps_an_existing_history_searchable_and_downgrades(blank_url):
    upgrade(blank_url, "0014_hooks")
    db = Database(blank_url)
    try:
        user = make_user(db)
        chat = make_session(db, user.id)
        other = make_user(db)
        sessions.append_messages(db, chat.id, [{"role": "user", "content": "my otter is called Pebble"},
                                               {"role": "assistant", "content": "Pebble the otter, lovely"}])
        sessions.append_messages(db, make_session(db, other.id).id, [{"role": "user", "content": "otter facts"}])
        upgrade(blank_url)
        assert {h.content for h in search_messages(db, user.id, "otter")} == {
            "my otter is called Pebble", "Pebble the otter, lovely"}
        assert [h.content for h in search_messages(db, user.id, '"otter"', sort="newest")] == [
            "Pebble the otter, lovely", "my otter is called Pebble"]
        sessions.bulk_insert_messages(db, [{"session_id": chat.id, "role": "user", "content": "otter again"}])
        assert len(search_messages(db, user.id, "otter")) == 3
        assert [h.content for h in search_messages(db, other.id, "otter")] == ["otter facts"]

        command.downgrade(alembic_config(blank_url), "0014_hooks")
        sessions.append_messages(db, chat.id, [{"role": "user", "content": "an otter once more"}])
        upgrade(blank_url)
        assert len(search_messages(db, user.id, "otter")) == 4
    finally:
        db.dispose()


def test_a_large_bulk_load_leaves_postgres_with_fresh_statistics(db, monkeypatch):
    """Right after a bulk load Postgres planned a 100,000-message history from statistics saying a few hundred
    rows: the recall search sorted a user's every message on disk (430 ms instead of 30 ms per search) until
    autovacuum came round. A large load now ends with ANALYZE of what it grew."""
    if db.is_sqlite:
        pytest.skip("Postgres' planner statistics; SQLite has no autovacuum lag to cover")
    monkeypatch.setattr(sessions, "ANALYZE_AFTER_ROWS", 40)
    chat = make_session(db, make_user(db).id)
    sessions.bulk_insert_messages(db, [{"session_id": chat.id, "role": "user", "content": f"line {i}"}
                                       for i in range(40)])
    with db.read() as s:
        analyzed = dict(s.execute(text(
            "SELECT relname, last_analyze FROM pg_stat_user_tables WHERE relname IN ('messages', 'message_search')"
        )).all())
    assert set(analyzed) == {"messages", "message_search"} and all(analyzed.values())
