"""The database engine: SQLite in WAL with one writer at a time, or Postgres.

Stores open transactions with `db.read()` or `db.write()`. On SQLite a write transaction starts
with `BEGIN IMMEDIATE` under a writer lock shared by every thread and process on the file
(shared/concurrency/writer_lock.py), so two writers never deadlock on a lock upgrade, "database is locked"
never reaches a caller, and a writer waiting for another process is woken the moment its turn
comes; the busy timeout covers processes that do not take the lock. On Postgres a read runs outside a
transaction; one that needs planner settings of its own (`db.read(planner=...)`) gets them from a pool
whose connections keep them.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Iterator

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DisconnectionError
from sqlmodel import Session, create_engine

from shared.concurrency.writer_lock import WriterLock, writer_lock_for

SQLITE_BUSY_TIMEOUT_MS = 30_000
PING_IDLE_SECONDS = 2.0  # a pooled Postgres connection idle this long is pinged before it is handed out
# Reads map the file instead of copying each page through a 2 MB page cache: at 1M messages (a 1.2 GB
# file) a search's random b-tree lookups cost a third less CPU (bench/README "Search at scale").
# SQLite caps it at its compile-time maximum (2 GB); it is address space, not memory.
SQLITE_MMAP_BYTES = 1 << 32


class Database:
    """An engine plus the transaction discipline every store uses."""

    def __init__(self, url: str, *, echo: bool = False) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        path = url.split("///", 1)[1] if "///" in url else ""
        self._write_lock: WriterLock | None = writer_lock_for(path) if self.is_sqlite else None
        self.engine = self._make_engine(url, echo)
        self._reader = self.engine if self.is_sqlite else self.engine.execution_options(isolation_level="AUTOCOMMIT")
        self._planned: dict[tuple[tuple[str, str], ...], Engine] = {}
        self._echo = echo

    def _make_engine(self, url: str, echo: bool) -> Engine:
        if not self.is_sqlite:
            engine = create_engine(url, echo=echo, pool_size=20, max_overflow=40, pool_use_lifo=True)
            _ping_when_idle(engine)
            return engine
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            echo=echo,
            pool_size=64,
            max_overflow=64,
            # The connection returned last is handed out first: its page cache is the warm one (a recall
            # search over 100k messages ran a sixth slower on whichever pooled connection came round).
            pool_use_lifo=True,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
        )
        event.listen(engine, "connect", _sqlite_on_connect)
        event.listen(engine, "begin", _sqlite_on_begin)
        return engine

    @contextmanager
    def read(self, *, planner: tuple[tuple[str, str], ...] = ()) -> Iterator[Session]:
        """A session for reads; nothing is committed.

        On Postgres its statements run outside a transaction (autocommit): under READ COMMITTED each statement
        of a read transaction took its own snapshot anyway, and the transaction only added a BEGIN and a
        ROLLBACK round trip (bench/README "Reads without a transaction"). On SQLite a read is always one
        transaction, so all of its statements see one snapshot.

        `planner`: Postgres settings (name, value) every statement of this read is planned with, e.g. the
        search's. They are set once per connection of a small pool kept for them (no SET, no transaction to
        hold a SET LOCAL, per read); SQLite has no planner settings and ignores them.
        """
        engine = self._reader if not planner or self.is_sqlite else self._planned_engine(planner)
        with Session(engine, expire_on_commit=False) as session:
            yield session

    def _planned_engine(self, planner: tuple[tuple[str, str], ...]) -> Engine:
        """The autocommit pool whose connections start with these settings (built on first use)."""
        engine = self._planned.get(planner)
        if engine is None:
            url = make_url(self.url)
            options = " ".join([url.query.get("options", ""), *(f"-c {name}={value}" for name, value in planner)])
            engine = create_engine(url, echo=self._echo, pool_size=4, max_overflow=16, pool_use_lifo=True,
                                   isolation_level="AUTOCOMMIT", connect_args={"options": options.strip()})
            _ping_when_idle(engine)
            engine = self._planned.setdefault(planner, engine)
        return engine

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A session whose work is committed on success and rolled back on error."""
        if self._write_lock is None:
            yield from self._transaction({})
            return
        with self._write_lock.hold():
            yield from self._transaction({"sqlite_immediate": True})

    def _transaction(self, options: dict) -> Iterator[Session]:
        with Session(self.engine, expire_on_commit=False) as session:
            session.connection(execution_options=options)
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def dispose(self) -> None:
        self.engine.dispose()
        for engine in self._planned.values():
            engine.dispose()


def _ping_when_idle(engine: Engine) -> None:
    """`pool_pre_ping`, but only for a connection that sat idle: a dead server or a dropped connection is still
    found before use (and the connection replaced), without a round trip before every transaction of a busy
    worker (a dozen per turn). A connection that died while in steady use fails its statement instead, which
    callers already treat as a transient error (the turn task retries)."""

    def mark(_dbapi_connection, record, *_) -> None:
        record.info["idle_since"] = time.monotonic()

    def ping_if_idle(dbapi_connection, record, _proxy) -> None:
        if time.monotonic() - record.info.get("idle_since", 0.0) < PING_IDLE_SECONDS:
            return
        try:
            alive = engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:
            raise DisconnectionError(str(exc)) from exc  # the pool replaces the connection and tries again
        if not alive:
            raise DisconnectionError("the database connection did not answer a ping")

    event.listen(engine, "connect", mark)
    event.listen(engine, "checkin", mark)
    event.listen(engine, "checkout", ping_if_idle)


def _sqlite_on_connect(dbapi_connection, _record) -> None:
    dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}")
    cursor.close()


def _sqlite_on_begin(conn) -> None:
    # Straight to the driver: every transaction begins here, and SQLAlchemy's statement machinery around a
    # bare BEGIN cost more CPU than SQLite takes to run it.
    driver = conn.connection.driver_connection
    driver.execute("BEGIN IMMEDIATE" if conn.get_execution_options().get("sqlite_immediate") else "BEGIN")


@lru_cache(maxsize=8)
def get_database(url: str) -> Database:
    """One Database per URL per process."""
    return Database(url)
