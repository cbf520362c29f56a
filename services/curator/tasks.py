"""Curator tasks: the beat's sweep that re-sends turns a lost enqueue or a dead worker left behind.

`celery -A services.curator.tasks worker -B -Q curator` runs the beat (its schedule comes from
shared.queue.schedule through the app config) and the worker that executes these tasks.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Callable

from celery import signals
from pydantic import BaseModel

from shared import heartbeats
from shared.config import Settings, get_settings
from shared.db import get_database
from shared.logs import setup_logging
from shared.queue.app import enqueue, get_celery
from shared.queue.names import RUN_TURN, SWEEP_TURNS
from shared.queue.payloads import RunTurn
from shared.redis import get_redis
from shared.stores import turns

log = logging.getLogger(__name__)
app = get_celery()

ANNOUNCE_EVERY_SECONDS = 10.0
ANNOUNCE_TTL_SECONDS = 30


def sweep(settings: Settings, send: Callable[[str, BaseModel], None] = enqueue) -> int:
    """Re-send RUN_TURN once per session holding a stuck turn; returns how many sessions were re-sent."""
    db = get_database(settings.sqlalchemy_url)
    stuck = turns.turns_to_resend(
        db, requeue_after=settings.turn_requeue_after_seconds, lease_seconds=settings.turn_lease_seconds
    )
    first_per_session: dict[str, str] = {}
    for turn in stuck:
        first_per_session.setdefault(turn.session_id, turn.id)
    for session_id, turn_id in first_per_session.items():
        send(RUN_TURN, RunTurn(turn_id=turn_id, session_id=session_id))
    level = logging.INFO if stuck else logging.DEBUG
    log.log(level, "sweep re-sent %d stuck turn(s) in %d session(s)", len(stuck), len(first_per_session))
    return len(first_per_session)


@app.task(name=SWEEP_TURNS)
def sweep_turns() -> int:
    """Beat entry: sweep, then say the curator is alive (a sweep that ran proves its worker works)."""
    settings = get_settings()
    count = sweep(settings)
    heartbeats.announce(get_redis(settings), service_name(), ttl_seconds=ANNOUNCE_TTL_SECONDS)
    return count


def service_name() -> str:
    return os.environ.get("HSTACK_SERVICE", "curator")


class Announcer:
    """Keeps this curator visible to `hstack status` and /readyz while its worker runs."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="curator-announcer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def _run(self) -> None:
        while True:
            try:
                heartbeats.announce(get_redis(get_settings()), service_name(), ttl_seconds=ANNOUNCE_TTL_SECONDS)
            except Exception:
                log.warning("curator announce failed; retrying", exc_info=True)
            if self._stop.wait(ANNOUNCE_EVERY_SECONDS):
                return


announcer = Announcer()


@signals.celeryd_init.connect
def _configure_logging(**_kwargs) -> None:
    """The `celery worker` command logs like every other service (structured, secrets redacted)."""
    settings = get_settings()
    setup_logging(settings.log_level, settings.log_format, settings.secret_values())


@signals.worker_ready.connect
def _announce_when_ready(**_kwargs) -> None:
    announcer.start()


@signals.worker_shutdown.connect
def _stop_announcing(**_kwargs) -> None:
    announcer.stop()
