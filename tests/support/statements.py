"""What a block of code asks the database: every statement, SQLAlchemy's and (SQLite) the driver's own."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from sqlalchemy import event


@contextmanager
def statements_of(db) -> Iterator[list[str]]:
    """Every statement run meanwhile: SQLAlchemy's, and on SQLite those sent straight to a driver connection
    (search_sqlite._run), through the connection's trace callback."""
    statements: list[str] = []
    traced = []

    def seen(conn, cursor, statement, *args):
        statements.append(statement)

    def checked_out(dbapi_connection, record, proxy):
        dbapi_connection.set_trace_callback(statements.append)
        traced.append(dbapi_connection)

    event.listen(db.engine, "before_cursor_execute", seen)
    if db.is_sqlite:
        event.listen(db.engine, "checkout", checked_out)
    try:
        yield statements
    finally:
        event.remove(db.engine, "before_cursor_execute", seen)
        if db.is_sqlite:
            event.remove(db.engine, "checkout", checked_out)
        for connection in traced:
            connection.set_trace_callback(None)
