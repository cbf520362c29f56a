"""The optional evolution schedule (EVOLVE_SCHEDULE_HOURS > 0; off by default, since every run spends tokens).

Each check starts at most one run per user: for the user's own or agent-made, unpinned, active skill with the
most sessions that loaded it, when it has enough evidence (EVOLVE_MIN_SESSIONS) and no run of it in the
last interval. The run row is committed, then its id is enqueued on the reviewer's queue.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Callable

from pydantic import BaseModel
from sqlmodel import select

from shared import clock
from shared.config import Settings
from shared.db import get_database
from shared.errors import HermesError
from shared.models.evolution import EvolutionRun
from shared.models.skills import SkillOrigin, SkillRecord, SkillState
from shared.queue.app import enqueue
from shared.queue.names import EVOLVE_SKILL
from shared.queue.payloads import EvolveSkill
from shared.stores import evolution_evidence, evolution_runs

log = logging.getLogger(__name__)


def candidates(db, user_id: str, since) -> list[str]:
    """The user's unpinned, active, own or agent-made skills with no run since `since`."""
    with db.read() as s:
        skills = s.exec(select(SkillRecord.name).where(
            SkillRecord.user_id == user_id, SkillRecord.origin != SkillOrigin.bundled.value,
            SkillRecord.pinned == False, SkillRecord.state == SkillState.active.value)).all()  # noqa: E712
        recent = set(s.exec(select(EvolutionRun.skill).where(EvolutionRun.user_id == user_id,
                                                             EvolutionRun.created_at > since)).all())
    return [name for name in skills if name not in recent]


def check(settings: Settings, send: Callable[[str, BaseModel], None] = enqueue) -> int:
    """Start the due scheduled runs; returns how many."""
    db = get_database(settings.sqlalchemy_url)
    since = clock.utcnow() - timedelta(hours=settings.evolve_schedule_hours)
    with db.read() as s:
        users = sorted(set(s.exec(select(SkillRecord.user_id).where(
            SkillRecord.origin != SkillOrigin.bundled.value)).all()))
    started = 0
    for user_id in users:
        evidence = {name: len(evolution_evidence.sessions_loading(db, user_id, name, settings.evolve_max_sessions))
                    for name in candidates(db, user_id, since)}
        ready = sorted((n for n, c in evidence.items() if c >= settings.evolve_min_sessions),
                       key=lambda n: (-evidence[n], n))
        if not ready:
            continue
        try:
            run = evolution_runs.start(db, settings, user_id, ready[0], trigger="schedule")
        except HermesError as exc:  # over the user's daily budget, or a run already under way
            log.info("scheduled evolution of %s skipped: %s", ready[0], exc.code)
            continue
        send(EVOLVE_SKILL, EvolveSkill(run_id=run.id))
        started += 1
    return started
