"""The api served over real HTTP for these tests, with the broker replaced by a recorder."""

from __future__ import annotations

import httpx
import openai
import pytest

from shared.queue.app import enqueue
from tests.services.api.helpers import EnqueueRecorder
from tests.support.live import serve_api
from tests.support.worker import inprocess_worker


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


@pytest.fixture(scope="module")
def chat_api(settings):
    """An api of the module's own that really enqueues, with a worker draining the turns queue."""
    from services.api.main import create_app

    app = create_app(settings)
    app.state.enqueue = enqueue
    with inprocess_worker(), serve_api(app) as base_url:
        yield base_url


@pytest.fixture
def oai(chat_api, user):
    """The official `openai` client on `chat_api`, as the test's user."""
    with openai.OpenAI(base_url=f"{chat_api}/v1", api_key=user.key, max_retries=0, timeout=30) as client:
        yield client
