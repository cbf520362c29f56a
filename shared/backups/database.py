"""The database inside a backup: SQLite through its online backup API, Postgres through pg_dump and psql."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

from sqlalchemy import inspect, text
from sqlalchemy.engine import make_url

from shared.config import Settings
from shared.db import get_database
from shared.errors import Unavailable

SQLITE_MEMBER = "database/hstack.db"
POSTGRES_MEMBER = "database/postgres.sql"
DUMP_TIMEOUT_SECONDS = 3600


def is_sqlite(settings: Settings) -> bool:
    return settings.sqlalchemy_url.startswith("sqlite")


def backend(settings: Settings) -> str:
    return "sqlite" if is_sqlite(settings) else "postgres"


def member_name(settings: Settings) -> str:
    """The one database member a backup of this backend holds."""
    return SQLITE_MEMBER if is_sqlite(settings) else POSTGRES_MEMBER


def sqlite_file(settings: Settings) -> Path:
    return Path(make_url(settings.sqlalchemy_url).database)


def dump(settings: Settings, staging: Path) -> str:
    """Write a consistent copy of the database under `staging`; returns its member name."""
    if is_sqlite(settings):
        target = staging / SQLITE_MEMBER
        target.parent.mkdir(parents=True, exist_ok=True)
        # One step: the copy reads a single snapshot however many writers commit meanwhile (WAL).
        with closing(sqlite3.connect(sqlite_file(settings))) as source, closing(sqlite3.connect(target)) as copy:
            source.backup(copy)
        return SQLITE_MEMBER
    target = staging / POSTGRES_MEMBER
    target.parent.mkdir(parents=True, exist_ok=True)
    _run([_tool("pg_dump"), "--no-owner", "--no-privileges", "--clean", "--if-exists", "--file", str(target)],
         settings)
    return POSTGRES_MEMBER


def load(settings: Settings, member: Path) -> None:
    """Put a dumped database in place of this stack's (the caller made sure it may be replaced)."""
    if is_sqlite(settings):
        target = sqlite_file(settings)
        for suffix in ("-wal", "-shm", "-journal"):
            Path(f"{target}{suffix}").unlink(missing_ok=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(member, target)
        return
    _run([_tool("psql"), "--quiet", "--no-psqlrc", "-v", "ON_ERROR_STOP=1", "--single-transaction",
          "--file", str(member)], settings)


def has_tables(settings: Settings) -> bool:
    """True when the stack's database already holds a schema (a restore over it needs --force)."""
    if is_sqlite(settings):
        path = sqlite_file(settings)
        if not path.exists():
            return False
    engine = get_database(settings.sqlalchemy_url).engine
    return bool(inspect(engine).get_table_names())


def schema_revision(settings: Settings) -> str | None:
    """The Alembic revision the database is at."""
    with get_database(settings.sqlalchemy_url).engine.connect() as conn:
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def libpq_environment(settings: Settings) -> dict[str, str]:
    """DATABASE_URL as libpq's environment: a password on a command line would show in every `ps`."""
    url = make_url(settings.sqlalchemy_url)
    parts = {"PGHOST": url.host, "PGPORT": url.port, "PGUSER": url.username, "PGPASSWORD": url.password,
             "PGDATABASE": url.database}
    return {name: str(value) for name, value in parts.items() if value is not None}


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise Unavailable(f"{name} is not installed: install the PostgreSQL client (postgresql-client) "
                          "to back up or restore a Postgres database.", code="postgres_client_missing")
    return found


def _run(argv: list[str], settings: Settings) -> None:
    env = {**os.environ, **libpq_environment(settings)}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=DUMP_TIMEOUT_SECONDS, env=env)
    if done.returncode != 0:
        raise Unavailable(f"{Path(argv[0]).name} failed: {done.stderr.strip()[-500:]}", code="database_dump_failed")
