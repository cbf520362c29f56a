"""Postgres' search plans: a search reaches the messages it ranks through an index, whatever the planner's
statistics say (a new server's tables, or a server run with autovacuum off, have none)."""

from __future__ import annotations

import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import Engine

from shared.stores import sessions
from shared.search.engine import search_messages
from tests.support.factories import make_session, make_user
from tests.support.statements import statements_of


def _scanned(plan: dict) -> set[str]:
    """The relations a plan (EXPLAIN's JSON node) reads with a sequential scan."""
    found = {plan["Relation Name"]} if plan.get("Node Type") == "Seq Scan" else set()
    for child in plan.get("Plans", []):
        found |= _scanned(child)
    return found


def test_a_ranked_search_on_tables_never_analyzed_reads_messages_by_their_index(db):
    if db.is_sqlite:
        pytest.skip("Postgres' planner; SQLite's search reads FTS5 and rowids")
    user = make_user(db)
    earlier, current = make_session(db, user.id), make_session(db, user.id)
    sessions.append_messages(db, earlier.id, [{"role": "user", "content": f"lighthouse sketch number {i}"}
                                              for i in range(300)])
    with db.read() as s:
        analyzed = s.execute(text("SELECT coalesce(last_analyze, last_autoanalyze) FROM pg_stat_user_tables "
                                  "WHERE relname = 'messages'")).scalar()
    if analyzed is not None:
        pytest.skip("autovacuum analyzed this test database already; the plan is only at risk without statistics")
    plans: list[dict] = []

    def explain(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().startswith("WITH matched"):  # the ranked statement, on the search's connection
            with cursor.connection.cursor() as c:
                c.execute("EXPLAIN (FORMAT JSON) " + statement, parameters)
                plans.append(c.fetchone()[0][0]["Plan"])

    event.listen(Engine, "after_cursor_execute", explain)  # every engine: the search reads from a pool of its own
    try:
        hits = search_messages(db, user.id, "lighthouse sketch", exclude_session_id=current.id, limit=5)
    finally:
        event.remove(Engine, "after_cursor_execute", explain)
    assert len(hits) == 5 and plans
    for plan in plans:  # without statistics the planner expected one match and scanned messages once per match
        assert not _scanned(plan) & {"messages", "message_search"}


def test_the_index_size_is_counted_while_small_and_estimated_once_large_in_one_statement(db, monkeypatch):
    """BM25's N: exact while the statistics may lag a small table, the statistics' figure past SMALL_TABLE."""
    if db.is_sqlite:
        pytest.skip("Postgres' statistics; SQLite's FTS5 keeps its own row count")
    from shared.search import postgres as search_postgres

    user = make_user(db)
    sessions.append_messages(db, make_session(db, user.id).id, [{"role": "user", "content": f"row {i}"}
                                                               for i in range(7)])
    with db.read() as s:
        exact = s.execute(text("SELECT count(*) FROM message_search")).scalar()
        estimate = s.execute(text("SELECT greatest(reltuples, pg_stat_get_live_tuples(oid)) FROM pg_class "
                                  "WHERE oid = 'message_search'::regclass")).scalar()
        with statements_of(db) as statements:
            assert search_postgres._total(s) == exact
        monkeypatch.setattr(search_postgres, "SMALL_TABLE", 0)
        assert search_postgres._total(s) == int(estimate)
    assert len(statements) == 1
