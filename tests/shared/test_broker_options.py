"""The broker settings that let workers and the beat outlive a Redis restart."""

from __future__ import annotations

import pytest

from shared.config import load_settings
from shared.queue.app import make_celery

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py


def test_workers_reconnect_to_a_restarted_redis_forever():
    """kill -9 of the embedded Redis under `make run`: Celery gave up after its default 100 reconnect
    attempts and a publish could wait forever on a dead socket. Retry forever; bound every broker command."""
    conf = make_celery(load_settings()).conf

    assert conf.broker_connection_retry is True and conf.broker_connection_retry_on_startup is True
    assert conf.broker_connection_max_retries is None
    options = conf.broker_transport_options
    assert options["socket_timeout"] > 1, "above kombu's BRPOP block, or an idle consumer times out"
    assert options["socket_connect_timeout"] and options["health_check_interval"] and options["retry_on_timeout"]
