"""Cancel requests pushed to the worker that runs the turn, so a cancel takes effect at once.

The database flag (`turns.cancel_requested`) stays the truth: the lease keeper's heartbeat reads it
every TURN_HEARTBEAT_SECONDS. This channel only makes the common case fast; a message lost while a
worker was not listening costs at most one heartbeat.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

import redis

from shared.config import Settings

log = logging.getLogger(__name__)

RESUBSCRIBE_SECONDS = 1.0
LISTEN_SECONDS = 0.5  # also how soon the listener notices it must stop


def channel(settings: Settings) -> str:
    """Pub/sub ignores the database number, so the broker key prefix keeps stacks apart."""
    return f"{settings.broker_key_prefix}turns:cancel-requested"


def announce(r: redis.Redis, settings: Settings, turn_id: str) -> None:
    """Tell every worker that this turn was asked to stop (the request itself is already committed)."""
    try:
        r.publish(channel(settings), turn_id)
    except redis.RedisError as exc:
        log.warning("could not push the cancel of %s; its worker sees it on its next heartbeat (%s)",
                    turn_id, type(exc).__name__)


def follow(r: redis.Redis, settings: Settings, on_cancel: Callable[[str], None], stop: threading.Event) -> None:
    """Call `on_cancel(turn_id)` for every announced cancel until `stop` is set, resubscribing after outages."""
    while not stop.is_set():
        try:
            with r.pubsub(ignore_subscribe_messages=True) as pubsub:
                pubsub.subscribe(channel(settings))
                while not stop.is_set():
                    message = pubsub.get_message(timeout=LISTEN_SECONDS)
                    if message is not None and message.get("type") == "message":
                        on_cancel(message["data"])
        except (redis.RedisError, OSError) as exc:
            log.warning("cancel pushes unheard until Redis answers; heartbeats still see them (%s)",
                        type(exc).__name__)
        stop.wait(RESUBSCRIBE_SECONDS)
