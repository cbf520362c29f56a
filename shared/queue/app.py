"""The Celery app every process shares, configured from Settings, plus `enqueue` by task name."""

from __future__ import annotations

import redis
from celery import Celery
from pydantic import BaseModel

from shared.config import Settings, get_settings
from shared.queue.names import QUEUE_TURNS, QUEUES, ROUTES
from shared.queue.schedule import beat_schedule
from shared.queue.wire import task_message
from shared.messaging.connections import get_redis, redis_url


BROKER_SOCKET_TIMEOUT_SECONDS = 15  # above kombu's 1 s BRPOP block, so an idle consumer never times out
BROKER_HEALTH_CHECK_SECONDS = 10


def make_celery(settings: Settings) -> Celery:
    url = redis_url(settings)
    app = Celery("hstack", broker=url, set_as_current=True)
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        task_ignore_result=True,
        task_acks_late=True,  # for a broker with real acks; on Redis the database recovers (_transport_options)
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_routes=ROUTES,
        task_default_queue=QUEUE_TURNS,
        task_create_missing_queues=True,
        beat_schedule=beat_schedule(settings),
        # A Redis that restarts (kill -9, `hstack run` bringing it back, a compose restart) must never take a
        # worker down: reconnect forever, on startup and after a loss. Running turns keep running meanwhile;
        # their leases, not the broker, decide who runs a turn.
        broker_connection_retry=True,
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        broker_connection_timeout=5,
        worker_cancel_long_running_tasks_on_connection_loss=False,
        broker_transport_options=_transport_options(settings),
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        enable_utc=True,
    )
    return app


def _transport_options(settings: Settings) -> dict:
    options: dict = {
        # A task message only wakes a worker; the database says what is owed. kombu's ack emulation kept each
        # delivered message in an "unacked" hash and index (a MULTI on delivery and another on the ack, with a
        # Redis client built for each) to restore it an hour later (its visibility timeout): the sweeper re-sends a
        # sent turn nobody claimed after TURN_REQUEUE_AFTER_SECONDS, a dead worker's turn after its lease, a
        # review left behind, and a stopping worker re-sends its sessions' next turns itself (and kombu still
        # puts back, at a warm shutdown, what it delivered and no task acked). Without it, paired against with
        # it: -1.2 / -1.6 ms a turn, worker CPU -1.0 / -1.6 ms (bench/README.md).
        "ack_emulation": False,
        # A dead or half-open broker connection is noticed within seconds (never a publish waiting forever):
        # the timeouts bound every command, the health check pings idle connections before use.
        "socket_timeout": BROKER_SOCKET_TIMEOUT_SECONDS,
        "socket_connect_timeout": 5,
        "socket_keepalive": True,
        "retry_on_timeout": True,
        "health_check_interval": BROKER_HEALTH_CHECK_SECONDS,
    }
    if settings.broker_key_prefix:
        options["global_keyprefix"] = settings.broker_key_prefix
    return options


def queue_depths(r: redis.Redis, settings: Settings) -> dict[str, int]:
    """Messages waiting in each queue (the Redis transport keeps a queue as a list under its name)."""
    pipe = r.pipeline(transaction=False)
    for name in QUEUES:
        pipe.llen(settings.broker_key_prefix + name)
    return dict(zip(QUEUES, pipe.execute()))


_app: Celery | None = None


def get_celery() -> Celery:
    """The process's Celery app, built on first use."""
    global _app
    if _app is None:
        _app = make_celery(get_settings())
    return _app


def enqueue(name: str, payload: BaseModel) -> None:
    """Send a task by name to the queue its route names: Celery's own message, one LPUSH (shared/queue/wire.py)."""
    settings = get_settings()
    queue = ROUTES[name]["queue"]
    get_redis(settings).lpush(settings.broker_key_prefix + queue, task_message(name, payload.model_dump(), queue))
