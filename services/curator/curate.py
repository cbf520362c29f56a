"""The beat's hourly curation check: one CURATE_SKILLS task per user whose pass is due; after a pass that
ran, one CONSOLIDATE_SKILLS on the reviewer's queue when CURATOR_CONSOLIDATE is on.

The pass itself re-checks both gates under the user's curator lock, so a redelivered or doubled
task (a second beat by mistake) finds nothing due and does nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Callable

from pydantic import BaseModel

from shared.config import Settings
from shared.curation.passes import PassReport, curate_if_due
from shared.curation.rules import Policy, wait_reason
from shared.db import get_database
from shared.queue.app import enqueue, get_celery
from shared.queue.names import CONSOLIDATE_SKILLS, CURATE_SKILLS, ROUTES
from shared.queue.payloads import ConsolidateSkills, CurateSkills
from shared.stores import curator

log = logging.getLogger(__name__)

Send = Callable[[str, BaseModel, float], None]


def send_expiring(name: str, payload: BaseModel, expires: float) -> None:
    """Send a task that is dropped if no worker took it within `expires` seconds (the next check resends)."""
    get_celery().send_task(name, kwargs=payload.model_dump(), expires=expires, **ROUTES[name])


def check(settings: Settings, now: datetime, send: Send = send_expiring) -> int:
    """Send a pass for every user first seen or due now; returns how many were sent."""
    if not settings.curator_enabled:
        return 0
    db = get_database(settings.sqlalchemy_url)
    policy = Policy.of(settings)
    sent = 0
    for user_id in curator.users_with_agent_skills(db):
        state = curator.state(db, user_id)
        if state is None or wait_reason(state.last_pass_at, curator.last_turn_at(db, user_id, now), now,
                                         policy) is None:
            send(CURATE_SKILLS, CurateSkills(user_id=user_id), max(1.0, settings.curator_check_seconds * 0.9))
            sent += 1
    log.log(logging.INFO if sent else logging.DEBUG, "curation check sent %d pass(es)", sent)
    return sent


def curate_user(settings: Settings, user_id: str, now: datetime,
                send: Callable[[str, BaseModel], None] = enqueue) -> PassReport:
    """One user's pass, if it is still due when it runs; then the model pass, if CURATOR_CONSOLIDATE."""
    if not settings.curator_enabled:
        return PassReport(user_id, skipped="the curator is disabled (CURATOR_ENABLED=false)")
    report = curate_if_due(get_database(settings.sqlalchemy_url), settings, user_id, now)
    log.info("curation of user %s: %s", user_id, report.summary)
    if report.run_id is not None and settings.curator_consolidate:
        send(CONSOLIDATE_SKILLS, ConsolidateSkills(user_id=user_id))  # the model pass, off the beat's path
    return report
