"""The reviewer's side of the curator's consolidation: one user's model pass, if the setting still allows it."""

from __future__ import annotations

import logging

from shared import clock
from shared.config import Settings
from shared.curation.consolidation import consolidate
from shared.db import get_database
from shared.errors import NotFound
from shared.llm import get_llm
from shared.stores import users

log = logging.getLogger(__name__)


def consolidate_user(settings: Settings, user_id: str) -> str:
    """Run the pass for a user who still exists; its summary (also the curator run's)."""
    if not (settings.curator_enabled and settings.curator_consolidate):
        return "skipped: CURATOR_CONSOLIDATE is off"
    db = get_database(settings.sqlalchemy_url)
    try:
        users.get_user(db, user_id)
    except NotFound:
        return "skipped: no such user"
    report = consolidate(db, settings, user_id, get_llm(settings), clock.utcnow())
    log.info("consolidation of user %s: %s", user_id, report.summary)
    return report.summary
