"""The scheduled-jobs tick: settle runs whose turn ended (their real outcome, their delivery in the outbox),
then claim every due job and send its run's turn to the `turns` queue.

Any number of ticks may run at once (a second beat by mistake): the store's claim never hands one slot
of a job to two of them. A run's turn is committed before it is sent, so a lost send is re-sent by the
turn sweep like any other turn.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

from pydantic import BaseModel

from shared import clock
from shared.config import Settings
from shared.db import get_database
from shared.queue.app import enqueue
from shared.queue.turns import send_turn
from shared.stores import cron_runs

log = logging.getLogger(__name__)

MAX_BATCHES = 50  # a tick claims at most this many batches; the next tick takes the rest


@dataclass
class Tick:
    started: int = 0
    missed: int = 0
    settled: int = 0


def tick(settings: Settings, send: Callable[[str, BaseModel], None] = enqueue) -> Tick:
    """One pass: settle ended runs, then claim and start due jobs, a batch at a time."""
    db = get_database(settings.sqlalchemy_url)
    done = Tick()
    for _ in range(MAX_BATCHES):
        settled = len(cron_runs.settle(db, clock.utcnow(), limit=settings.cron_claim_batch))
        done.settled += settled
        if settled < settings.cron_claim_batch:
            break
    for _ in range(MAX_BATCHES):
        claimed = cron_runs.claim_due(db, clock.utcnow(), limit=settings.cron_claim_batch,
                                      grace_seconds=settings.cron_grace_seconds,
                                      max_running=settings.max_running_turns_per_user)
        for turn in claimed.send:
            send_turn(send, turn.id, turn.session_id)
        done.started += len(claimed.started)
        done.missed += len(claimed.missed)
        if claimed.examined < settings.cron_claim_batch:
            break
    if done.started or done.missed or done.settled:
        log.info("cron tick: %d run(s) started, %d missed, %d settled", done.started, done.missed, done.settled)
    return done
