"""SQLite's search statements run on the driver connection (search_sqlite._run); what the database refuses
still reaches the caller as SQLAlchemy's errors: a refused query answers no hits, anything else is raised."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import DBAPIError, OperationalError

from shared.stores import search_sqlite, sessions
from shared.stores.search import search_messages
from shared.stores.search_scope import Scope
from tests.support.factories import make_session, make_user


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
