"""Curator tasks: the beat's periodic work, each task thin and idempotent.

- sweep_turns: expire approvals nobody answered in time (their turns resume), settle and stop delegated children
  that ended unseen, ran past their deadline or lost their parent (parents resume), re-send turns and reviews a lost enqueue or a dead worker left behind, and send
  waiting turns their user's free slots allow (never past MAX_RUNNING_TURNS_PER_USER);
- check_curation (hourly): one curate_skills per user whose curation pass is due;
- curate_skills: that user's pass (stale / archived skills, backup, ledger), if still due;
- sweep_expired: expire staged memory writes and orphaned turn event streams, end idle sessions, fail evolution
  runs whose worker died;
- end_session: a session a client ended (/new): the memory provider's on_session_end, once;
- back_up_server: a whole-server backup when BACKUP_INTERVAL_HOURS says one is due, the newest BACKUP_KEEP kept.
- tick_cron: settle ended runs of scheduled jobs, then start the due ones (services/curator/cron.py).
- check_evolution (only when EVOLVE_SCHEDULE_HOURS > 0): start skill evolution runs on the reviewer pool.

`celery -A services.curator.tasks worker -B -Q curator` runs the beat (its schedule comes from
shared.queue.schedule through the app config) and the worker that executes these tasks. Curation and
staged-write expiry read shared.clock, so HSTACK_CLOCK_OFFSET_SECONDS moves a curator process in time
(event streams are aged in Redis's own time, like their TTLs).
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Callable

from celery import signals
from pydantic import BaseModel

from services.curator import cron, curate, delegations, evolution, expiry, session_end
from shared import clock
from shared.backups import scheduled as scheduled_backups
from shared.ops import heartbeats
from shared.config import Settings, get_settings
from shared.db import get_database
from shared.ops.logs import setup_logging
from shared.queue.app import enqueue, get_celery
from shared.messaging.connections import get_redis
from shared.queue.names import (BACK_UP_SERVER, CHECK_CURATION, CHECK_EVOLUTION, CURATE_SKILLS, END_SESSION,
                                REVIEW_SESSION, SWEEP_EXPIRED, SWEEP_TURNS, TICK_CRON)
from shared.queue.payloads import ReviewSession
from shared.queue.turns import send_turn
from shared.stores import evolution_runs, reviews, turns

log = logging.getLogger(__name__)
app = get_celery()

ANNOUNCE_EVERY_SECONDS = 10.0
ANNOUNCE_TTL_SECONDS = 30


def sweep(settings: Settings, send: Callable[[str, BaseModel], None] = enqueue) -> int:
    """Expire unanswered approvals, re-send RUN_TURN once per session holding a stuck turn, and reviews left behind.

    Returns how many turns and reviews were re-sent.
    """
    db = get_database(settings.sqlalchemy_url)
    expiry.expire_approvals(db, clock.utcnow(), send)
    delegations.sweep(settings, db, get_redis(settings), send)
    stuck = turns.turns_to_resend(
        db, requeue_after=settings.turn_requeue_after_seconds, lease_seconds=settings.turn_lease_seconds,
        max_running=settings.max_running_turns_per_user,
    )
    first_per_session: dict[str, str] = {}
    for turn in stuck:
        first_per_session.setdefault(turn.session_id, turn.id)
    for session_id, turn_id in first_per_session.items():
        send_turn(send, turn_id, session_id)
    level = logging.INFO if stuck else logging.DEBUG
    log.log(level, "sweep re-sent %d stuck turn(s) in %d session(s)", len(stuck), len(first_per_session))
    left = reviews.reviews_to_resend(db, settings.review_lease_seconds)
    for review in left:
        send(REVIEW_SESSION, ReviewSession(session_id=review.session_id, review_id=review.id))
    if left:
        log.info("sweep re-sent %d review(s) nobody picked up", len(left))
    return len(first_per_session) + len(left)


@app.task(name=SWEEP_TURNS)
def sweep_turns() -> int:
    """Beat entry: sweep, then say the curator is alive (a sweep that ran proves its worker works)."""
    settings = get_settings()
    count = sweep(settings)
    heartbeats.announce(get_redis(settings), service_name(), ttl_seconds=ANNOUNCE_TTL_SECONDS)
    return count


@app.task(name=CHECK_CURATION)
def check_curation() -> int:
    """Beat entry: send a pass for every user whose pass is due; returns how many."""
    return curate.check(get_settings(), clock.utcnow())


@app.task(name=CURATE_SKILLS)
def curate_skills(user_id: str) -> str:
    """One user's curation pass, if still due when it runs; returns its summary."""
    return curate.curate_user(get_settings(), user_id, clock.utcnow()).summary


@app.task(name=SWEEP_EXPIRED)
def sweep_expired() -> dict:
    """Beat entry: expire staged memory writes and orphaned turn event streams."""
    settings = get_settings()
    staged, streams = expiry.sweep(
        get_database(settings.sqlalchemy_url), get_redis(settings), now=clock.utcnow(),
        ttl_seconds=settings.event_stream_ttl_seconds, scan_limit=settings.stream_sweep_scan_limit,
        cursor_key=f"{settings.broker_key_prefix}curator:streams-cursor")
    ended = session_end.end_idle_sessions(settings, clock.utcnow())
    interrupted = evolution_runs.fail_stale(get_database(settings.sqlalchemy_url), clock.utcnow())
    return {"staged_expired": staged, "streams_expiring": streams.expiring, "streams_deleted": streams.deleted,
            "sessions_ended": ended, "evolutions_interrupted": interrupted}


@app.task(name=END_SESSION)
def end_session(session_id: str) -> bool:
    """A client ended the session: fire on_session_end unless it already ended."""
    return session_end.end_session(get_settings(), session_id)


@app.task(name=BACK_UP_SERVER)
def back_up_server() -> str | None:
    """Beat entry: a scheduled backup if one is due; the path written, if any."""
    written = scheduled_backups.back_up_if_due(get_settings(), clock.utcnow())
    return str(written) if written else None


@app.task(name=TICK_CRON)
def tick_cron() -> dict:
    """Beat entry: one scheduled-jobs tick; returns how many runs it started, missed and settled."""
    done = cron.tick(get_settings())
    return {"started": done.started, "missed": done.missed, "settled": done.settled}


@app.task(name=CHECK_EVOLUTION)
def check_evolution() -> int:
    """Beat entry (only when EVOLVE_SCHEDULE_HOURS > 0): start runs for skills with enough evidence."""
    return evolution.check(get_settings())


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
