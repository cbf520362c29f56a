"""The api served over real HTTP for these tests, with the broker replaced by a recorder."""

from __future__ import annotations

import httpx
import pytest

from tests.services.api.helpers import EnqueueRecorder
from tests.support.live import serve_api


@pytest.fixture(scope="session")
def api_app(settings):
    from services.api.main import create_app

    return create_app(settings)


@pytest.fixture(scope="session")
def api(api_app):
    with serve_api(api_app) as base_url:
        yield base_url


@pytest.fixture(autouse=True)
def enqueued(api_app, db):
    """A fresh recorder on the shared app for each test, so no task reaches the real broker."""
    recorder = EnqueueRecorder(db)
    api_app.state.enqueue = recorder
    return recorder


@pytest.fixture
def client(api):
    with httpx.Client(base_url=api, timeout=20) as http:
        yield http


@pytest.fixture
def admin_headers(settings):
    return {"Authorization": f"Bearer {settings.admin_api_key.get_secret_value()}"}
