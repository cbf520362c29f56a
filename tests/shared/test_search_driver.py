"""SQLite's search statements run on the driver connection (search_sqlite._run): what the database refuses still
reaches the caller as SQLAlchemy's errors, a refused query answering no hits. A query matching more rows of the
whole index than the ranking budget is counted once, not on every search (search_common.Common)."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import DBAPIError, OperationalError

from shared.stores import sessions
from shared.search import sqlite as search_sqlite
from shared.search.engine import search_messages
from shared.search.scope import Scope
from shared.search.common import Common
from shared.search.sqlite import BUDGET
from tests.support.factories import make_session, make_user
from tests.support.statements import statements_of


@pytest.fixture
def history(db):
    if not db.is_sqlite:
        pytest.skip("SQLite's driver path; Postgres' statements run through SQLAlchemy")
    user = make_user(db)
    sessions.append_messages(db, make_session(db, user.id).id, [
        {"role": "user", "content": "the lighthouse keeper paints the railings"},
        {"role": "assistant", "content": "blue railings weather the salt best"}])
    return user


def test_a_query_fts5_refuses_answers_no_hits(db, history, monkeypatch, caplog):
    assert search_messages(db, history.id, "lighthouse railings")
    monkeypatch.setattr(search_sqlite, "fts5_match", lambda *args: 'AND "oops')  # FTS5: syntax error
    assert search_messages(db, history.id, "lighthouse railings") == []
    assert "search query refused by the database (OperationalError)" in caplog.text


def test_any_other_database_error_is_raised_as_sqlalchemys(db, history, monkeypatch):
    monkeypatch.setattr(Scope, "where", lambda self, *args: ("m.no_such_column = 1", {}))
    with pytest.raises(OperationalError) as raised:
        search_messages(db, history.id, "lighthouse railings")
    assert isinstance(raised.value, DBAPIError) and "no_such_column" in str(raised.value.orig)


def test_a_common_word_is_counted_once_and_every_search_finds_the_same(db, history, monkeypatch):
    monkeypatch.setattr(search_sqlite, "COMMON", Common(BUDGET))
    chats = [make_session(db, history.id) for _ in range(3)]
    sessions.bulk_insert_messages(db, [
        {"session_id": chats[i % 3].id, "role": "user", "content": "a quokka sighting"}
        for i in range(BUDGET + 100)])

    def search():
        with statements_of(db) as statements:
            hits = search_messages(db, history.id, "quokka sighting")
        counts = [s for s in statements if "count(*)" in s and "MATCH" in s]
        return [h.message_id for h in hits], counts

    first, counted_first = search()
    again, counted_again = search()
    assert first == again and len(first) == 10
    assert counted_first and len(counted_again) < len(counted_first)


def test_a_common_query_is_forgotten_after_its_time():
    common = Common(BUDGET, ttl=60.0, size=2)
    common.add("index", "quokka")
    assert common.holds("index", "quokka", BUDGET) and common.holds("index", "quokka", 10)
    assert not common.holds("index", "quokka", BUDGET + 1), "more than the budget was never counted"
    assert not common.holds("other index", "quokka", BUDGET)
    common.add("index", "wombat")
    common.add("index", "numbat")
    assert not common.holds("index", "quokka", BUDGET), "the oldest entry made room"
    stale = Common(BUDGET, ttl=-1.0)
    stale.add("index", "quokka")
    assert not stale.holds("index", "quokka", BUDGET)
