"""What a block of code asks the database: every statement, SQLAlchemy's and (SQLite) the driver's own."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from sqlalchemy import event
from sqlalchemy.engine import Engine


@contextmanager
def statements_of(db) -> Iterator[list[str]]:
    """Every statement run meanwhile on `db`'s database: SQLAlchemy's on any of its pools (a read with planner
    settings has its own), and on SQLite those sent straight to a driver connection (search_sqlite._run),
    through the connection's trace callback."""
    statements: list[str] = []
    traced = []
    url = db.engine.url

    def seen(conn, cursor, statement, *args):
        if conn.engine.url == url:
            statements.append(statement)

    def checked_out(dbapi_connection, record, proxy):
        dbapi_connection.set_trace_callback(statements.append)
        traced.append(dbapi_connection)

    event.listen(Engine, "before_cursor_execute", seen)
    if db.is_sqlite:
        event.listen(db.engine, "checkout", checked_out)
    try:
        yield statements
    finally:
        event.remove(Engine, "before_cursor_execute", seen)
        if db.is_sqlite:
            event.remove(db.engine, "checkout", checked_out)
        for connection in traced:
            connection.set_trace_callback(None)
