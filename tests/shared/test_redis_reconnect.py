"""Every Redis client the services use reconnects by itself to a Redis that was killed and restarted."""

from __future__ import annotations

import asyncio

import pytest

from shared.config import Settings
from shared.messaging.connections import _sync_client, bounded_async_redis, get_async_redis
from tests.support.env import free_port, start_embedded_redis

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py


@pytest.fixture
def restartable_redis(tmp_path):
    """A private redis-server and a function that kill -9s it and starts it again on the same port."""
    port = free_port()
    url, proc = start_embedded_redis(tmp_path, port=port)
    procs = [proc]

    def restart() -> None:
        procs[-1].kill()
        procs[-1].wait(10)
        procs.append(start_embedded_redis(tmp_path, port=port)[1])

    yield url, restart
    procs[-1].kill()
    procs[-1].wait(10)


def settings_for(url: str) -> Settings:
    return Settings(REDIS_URL=url)


def test_the_apis_async_client_answers_the_first_call_after_a_restart(restartable_redis):
    """After kill -9 of the embedded Redis under `make run` and its restart, the api's first /readyz
    answered 503: the asyncio client failed the first command on each dead pooled connection instead of
    reconnecting."""
    url, restart = restartable_redis

    async def scenario() -> None:
        settings = settings_for(url)
        bounded = bounded_async_redis(settings, connections=2, read_timeout=5, name="test:reconnect")
        for client in (bounded, get_async_redis(settings)):
            assert await client.ping()
            restart()
            assert await client.ping(), "the first command after the restart succeeds"
            await client.aclose()

    asyncio.run(scenario())


def test_the_sync_client_answers_the_first_call_after_a_restart(restartable_redis):
    url, restart = restartable_redis
    client = _sync_client(url)
    assert client.ping()
    restart()
    assert client.ping()
