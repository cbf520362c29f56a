"""The reads every turn makes (the claim's next unfinished turn, a user's unsent turns, the accept's slot
decision) find the few unfinished turns through an index on their status, however long the finished
history of the session and its user: they walked every turn before (migration 0020)."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from shared.models.turns import TurnStatus
from shared.stores import turn_slots, turns
from tests.support.factories import make_session, make_user

FINISHED = 300


def _plan(db, statement, params: dict) -> str:
    with db.read() as s:
        literal = statement.params(**params).compile(dialect=s.get_bind().dialect,
                                                     compile_kwargs={"literal_binds": True})
        return " | ".join(row[-1] for row in s.execute(text(f"EXPLAIN QUERY PLAN {literal}")).all())


@pytest.fixture
def long_history(db):
    """A user whose session holds FINISHED completed turns, then one queued turn not sent yet."""
    user = make_user(db)
    session = make_session(db, user.id)
    for n in range(FINISHED):
        turns.create_turn(db, user.id, session.id, f"question {n}")
    with db.write() as s:
        s.execute(text("UPDATE turns SET status = :done WHERE session_id = :s"),
                  {"done": TurnStatus.completed.value, "s": session.id})
    waiting, _, _ = turns.accept_turn(db, user.id, session.id, "the newest question", max_running=1)
    with db.write() as s:  # as if the user's slot had been full when it was accepted: never sent
        s.execute(text("UPDATE turns SET enqueued_at = NULL WHERE id = :id"), {"id": waiting.id})
    return user, session, waiting


def test_the_turn_path_finds_the_unfinished_turn_among_a_long_history(db, long_history):
    user, session, waiting = long_history
    with db.read() as s:
        assert s.execute(turns._NEXT_UNFINISHED, {"session_id": session.id}).first().id == waiting.id
        assert s.execute(turn_slots._WAITING_USER, {"session_id": session.id}).scalar() == user.id
        held = s.execute(turn_slots._SESSIONS_OF_USER, {"user": user.id}).all()
    assert [(row.session_id, row.held, row.head) for row in held] == [(session.id, 0, waiting.seq)]


@pytest.mark.sqlite_only
def test_the_turn_path_reads_use_the_status_indexes_on_sqlite(db, long_history):
    """SQLite has no statistics to prefer an index by: each read must name one that holds the status."""
    user, session, _ = long_history
    assert "ix_turns_session_status (session_id=? AND status=?)" in _plan(
        db, turns._NEXT_UNFINISHED, {"session_id": session.id})
    assert "ix_turns_user_status_sent (user_id=? AND status=? AND enqueued_at=?)" in _plan(
        db, turn_slots._WAITING_USER, {"session_id": session.id})
    assert "ix_turns_user_status_sent (user_id=? AND status=?)" in _plan(
        db, turn_slots._SESSIONS_OF_USER, {"user": user.id})


def test_migration_0020_adds_the_indexes_and_downgrades(blank_url):
    from alembic import command
    from sqlalchemy import create_engine, inspect

    from shared.migrate import alembic_config, upgrade

    def indexes() -> set[str]:
        engine = create_engine(blank_url)
        try:
            return {ix["name"] for ix in inspect(engine).get_indexes("turns")}
        finally:
            engine.dispose()

    upgrade(blank_url, "0020_turn_lookups")
    assert {"ix_turns_session_status", "ix_turns_user_status_sent"} <= indexes()
    command.downgrade(alembic_config(blank_url), "0019_search_body_index")
    assert not {"ix_turns_session_status", "ix_turns_user_status_sent"} & indexes()
    upgrade(blank_url)
    assert {"ix_turns_session_status", "ix_turns_user_status_sent"} <= indexes()
