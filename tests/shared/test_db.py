"""The database discipline: SQLite pragmas, no lock errors under concurrent writers, migrations."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text
from sqlmodel import SQLModel

import shared.models  # noqa: F401
from shared.models.search import include_name
from shared.db import Database
from shared.stores import sessions
from tests.support.factories import make_user


def test_sqlite_runs_in_wal_with_foreign_keys_and_a_busy_timeout(tmp_data_dir):
    db = Database(f"sqlite:///{tmp_data_dir / 'x.db'}")
    with db.read() as s:
        assert s.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert s.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert s.execute(text("PRAGMA busy_timeout")).scalar() >= 5000


def test_many_concurrent_writers_never_see_a_locked_database(db):
    user = make_user(db)
    session = sessions.create_session(db, user.id)

    def write(i: int) -> None:
        sessions.append_messages(db, session.id, [{"role": "user", "content": f"m{i}"}])

    with ThreadPoolExecutor(32) as pool:
        list(pool.map(write, range(300)))
    assert len(sessions.list_messages(db, session.id)) == 300


def test_migrations_build_exactly_the_models_schema(settings, db):
    with db.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"include_name": include_name}), SQLModel.metadata)
    assert diff == []


@pytest.mark.sqlite_only
def test_migrations_upgrade_a_blank_sqlite_database(tmp_data_dir):
    from shared.migrate import upgrade

    url = f"sqlite:///{tmp_data_dir / f'{uuid.uuid4().hex}.db'}"
    upgrade(url)
    upgrade(url)  # a second run is a no-op
    with Database(url).read() as s:
        assert s.execute(text("SELECT version_num FROM alembic_version")).scalar()


def test_migrations_have_a_single_head(settings):
    from alembic.script import ScriptDirectory

    from shared.migrate import alembic_config

    heads = ScriptDirectory.from_config(alembic_config(settings.sqlalchemy_url)).get_heads()
    assert len(heads) == 1, f"merge the migration branches: heads {heads}"
