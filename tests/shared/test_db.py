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


@pytest.mark.sqlite_only
def test_the_provenance_migration_gives_foreground_skills_to_their_user(tmp_data_dir):
    """The provenance migration (0013_learning) keeps what each row meant: foreground agent skills were made because the user
    asked (now the user's), review skills stay the agent's, installed and bundled rows are unchanged."""
    from shared.migrate import upgrade

    url = f"sqlite:///{tmp_data_dir / f'{uuid.uuid4().hex}.db'}"
    upgrade(url, "0010")
    database = Database(url)
    with database.write() as s:
        s.execute(text("INSERT INTO users (id, name, created_at) VALUES ('u1', 'u1', '2026-01-01')"))
        for name, origin, by in (("fg", "agent", "agent"), ("rv", "agent", "review"), ("inst", "user", "user"),
                                 ("bund", "bundled", None)):
            s.execute(text("INSERT INTO skills (user_id, name, origin, created_by, state, pinned, view_count, "
                           "use_count, patch_count, created_at) VALUES ('u1', :n, :o, :b, 'active', 0, 0, 0, 0, "
                           "'2026-01-01')"), {"n": name, "o": origin, "b": by})
    upgrade(url)
    with database.read() as s:
        rows = dict(s.execute(text("SELECT name, origin FROM skills")).all())
    assert rows == {"fg": "user", "rv": "agent", "inst": "user", "bund": "bundled"}


def test_a_pooled_postgres_connection_the_server_dropped_is_replaced_before_use(db, monkeypatch):
    """Connections are pinged only after sitting idle (not before every transaction): one the server killed
    while it sat in the pool is found dead by that ping and replaced, so the caller never sees the error."""
    if db.is_sqlite:
        pytest.skip("Postgres' pooled connections; SQLite opens a file, nothing can drop it")
    import shared.db

    pooled, other = Database(db.url), Database(db.url)
    try:
        with pooled.read() as s:  # its pool now holds this one connection
            doomed = s.execute(text("SELECT pg_backend_pid()")).scalar()
        with other.read() as s:
            s.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": doomed})
        monkeypatch.setattr(shared.db, "PING_IDLE_SECONDS", 0.0)  # as if it had sat idle for a while

        with pooled.read() as s:
            assert s.execute(text("SELECT pg_backend_pid()")).scalar() != doomed
    finally:
        pooled.dispose()
        other.dispose()


def test_a_postgres_read_holds_no_transaction_open_and_a_write_after_it_still_rolls_back(db):
    """A read's statements run on their own (no BEGIN/ROLLBACK round trips, no 'idle in transaction' session
    holding back vacuum); the same pooled connection, handed to a write next, is a transaction again."""
    if db.is_sqlite:
        pytest.skip("Postgres' autocommit reads; a SQLite read is one transaction over one snapshot")
    probe = Database(db.url)
    try:
        with probe.read() as s:
            pid = s.execute(text("SELECT pg_backend_pid()")).scalar()
            with db.read() as other:
                state = other.execute(text("SELECT state FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid}).scalar()
            assert state == "idle"
        with probe.read(planner=(("enable_seqscan", "off"),)) as s:  # its settings' own pool: the read's
            assert s.execute(text("SELECT pg_backend_pid()")).scalar() != pid  # connection is not handed out
            assert s.execute(text("SHOW enable_seqscan")).scalar() == "off"
        marker = f"rolled-back-{uuid.uuid4().hex[:20]}"
        with pytest.raises(RuntimeError), probe.write() as s:
            assert s.execute(text("SELECT pg_backend_pid()")).scalar() == pid  # the read's connection, reused
            s.execute(text("INSERT INTO users (id, name, created_at) VALUES (:id, :id, now())"), {"id": marker})
            raise RuntimeError("the write fails after its insert")
        with probe.read() as s:
            assert s.execute(text("SELECT count(*) FROM users WHERE id = :id"), {"id": marker}).scalar() == 0
    finally:
        probe.dispose()


def test_a_postgres_statement_run_often_stays_prepared_between_reads_searches_and_writes(db):
    """psycopg prepares a statement a connection runs often (the server then neither parses nor plans it
    again), and forgets them all when the connection runs a ROLLBACK: no read and no successful write may end
    with one (a search's read transaction did, once a turn, and kept every statement of the worker unprepared)."""
    if db.is_sqlite:
        pytest.skip("psycopg's prepared statements")
    probe = Database(db.url)
    try:
        for _ in range(8):
            with probe.read() as s:
                s.execute(text("SELECT count(*) FROM users WHERE name = :name"), {"name": "nobody"})
            with probe.read(planner=(("enable_seqscan", "off"),)) as s:
                s.execute(text("SELECT count(*) FROM sessions"))
            with probe.write() as s:
                s.execute(text("SELECT count(*) FROM turns"))
        with probe.read() as s:
            prepared = s.execute(text("SELECT statement FROM pg_prepared_statements")).scalars().all()
        assert any("FROM users WHERE name" in statement for statement in prepared)
    finally:
        probe.dispose()


def test_a_read_with_planner_settings_plans_with_them_and_keeps_the_urls_own_options(db):
    """The search's settings hold for every statement of its read and for no other read; options the
    operator put in DATABASE_URL still apply to those connections."""
    if db.is_sqlite:
        pytest.skip("Postgres' planner settings; SQLite ignores them")
    separator = "&" if "?" in db.url else "?"
    probe = Database(f"{db.url}{separator}options=-c%20statement_timeout%3D4321")
    planner = (("plan_cache_mode", "force_custom_plan"), ("enable_seqscan", "off"))
    try:
        for _ in range(2):  # the second read reuses the pooled connection: its settings stay
            with probe.read(planner=planner) as s:
                shown = [s.execute(text(f"SHOW {name}")).scalar() for name in
                         ("plan_cache_mode", "enable_seqscan", "statement_timeout")]
            assert shown == ["force_custom_plan", "off", "4321ms"]
        with probe.read() as s:
            assert [s.execute(text(f"SHOW {name}")).scalar() for name in ("plan_cache_mode", "enable_seqscan")] \
                == ["auto", "on"]
    finally:
        probe.dispose()
