"""Sessions that really end: a client ended them (/new) or they sat idle; the provider hears it once.

`ended_at` is claimed with one conditional UPDATE before the hook runs, so a session's
on_session_end fires at most once however many END_SESSION tasks and sweeps race for it.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from shared.config import Settings
from shared.db import get_database
from shared.providers import ProviderContext, ProviderManager, build_manager
from shared.stores import sessions

log = logging.getLogger(__name__)

IDLE_BATCH = 200  # sessions ended per sweep; the rest wait for the next one
_MANAGERS: dict[str, ProviderManager] = {}
_LOCK = threading.Lock()


def manager_for(settings: Settings) -> ProviderManager:
    """This process's provider manager for the configuration, built on first use."""
    key = settings.model_dump_json()
    with _LOCK:
        if key not in _MANAGERS:
            _MANAGERS[key] = build_manager(settings)
        return _MANAGERS[key]


def end_session(settings: Settings, session_id: str) -> bool:
    """End the session and fire on_session_end; False when it had already ended (or does not exist)."""
    db = get_database(settings.sqlalchemy_url)
    session = sessions.claim_end(db, session_id)
    if session is None:
        return False
    manager = manager_for(settings)
    if manager.active:
        manager.on_session_end(ProviderContext(settings, db, session.user_id, session.id, None, session.source))
    log.info("session %s ended", session_id)
    return True


def end_idle_sessions(settings: Settings, now: datetime) -> int:
    """End every session without activity for SESSION_IDLE_END_HOURS (0: never); returns how many."""
    if settings.session_idle_end_hours <= 0:
        return 0
    db = get_database(settings.sqlalchemy_url)
    idle = sessions.idle_session_ids(db, now - timedelta(hours=settings.session_idle_end_hours), IDLE_BATCH)
    return sum(end_session(settings, session_id) for session_id in idle)
