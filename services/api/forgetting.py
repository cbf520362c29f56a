"""Forget a session or a user everywhere it is kept: turns stopped, rows, event streams, kept outputs, provider.

The order matters: running turns are cancelled first (so no worker goes on writing for them), then the
rows go in one transaction, then what lives outside the database, and the memory provider hears the end
last, once: only when this deletion is what ended the session (an ended session already told it).
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

import redis

from shared.messaging import cancels, events
from shared.config import Settings
from shared.db import Database
from shared.errors import HermesError, InvalidState
from shared.security.paths import resolve_inside
from shared.providers import ProviderContext, ProviderManager
from shared.stores import forget, sessions, turns, users
from shared.stores.forget import Forgotten

log = logging.getLogger(__name__)

SETTLE_POLL_SECONDS = 0.1
KEPT_NOTE = ("Memory entries and skills learned from these conversations stay: remove them on the memory "
             "and skills pages if you want them gone too.")


def forget_session(db: Database, r: redis.Redis, settings: Settings, manager: ProviderManager,
                   user_id: str, session_id: str) -> Forgotten:
    """Delete one of the user's sessions; another user's (or a missing one) is NotFound."""
    session = sessions.get_session(db, user_id, session_id)
    _cancel_open_turns(db, r, settings, user_id, session_id)
    ended = sessions.claim_end(db, session_id)
    forgotten = forget.forget_session(db, session_id)
    _drop_outside(r, settings, user_id, forgotten)
    if ended is not None and manager.active:
        manager.on_session_end(ProviderContext(settings, db, user_id, session_id, None, session.source))
    return forgotten


def forget_user(db: Database, r: redis.Redis, settings: Settings, manager: ProviderManager,
                user_id: str) -> tuple[Forgotten, list[str]]:
    """Delete every session of the user as above, then the user's rows and DATA_DIR/users/<id>.

    Returns the forgotten and the hashes of the user's keys, for the caller to drop from auth caches."""
    user = users.find_user(db, user_id)
    ended = []
    for session_id in forget.session_ids_of(db, user.id):
        _cancel_open_turns(db, r, settings, user.id, session_id)
        if (session := sessions.claim_end(db, session_id)) is not None:
            ended.append(session)
    forgotten, key_hashes = forget.forget_user(db, user.id)
    _drop_outside(r, settings, user.id, forgotten)
    shutil.rmtree(user_root(settings, user.id), ignore_errors=True)
    if manager.active:
        for session in ended:
            manager.on_session_end(ProviderContext(settings, db, user.id, session.id, None, session.source))
    return forgotten, key_hashes


def user_root(settings: Settings, user_id: str) -> Path:
    return Path(settings.data_dir) / "users" / user_id


def _cancel_open_turns(db: Database, r: redis.Redis, settings: Settings, user_id: str, session_id: str) -> None:
    """The existing cancel path for every open turn: queued ones end at once, running ones hear it pushed; then
    wait (at most FORGET_CANCEL_WAIT_SECONDS) for their workers to stop, so none writes on after the rows go."""
    for turn_id in forget.open_turn_ids(db, session_id):
        try:
            turns.request_cancel(db, user_id, turn_id)
        except InvalidState:  # it finished meanwhile
            continue
        cancels.announce(r, settings, turn_id)
    deadline = time.monotonic() + settings.forget_cancel_wait_seconds
    while forget.open_turn_ids(db, session_id) and time.monotonic() < deadline:
        time.sleep(SETTLE_POLL_SECONDS)


def _drop_outside(r: redis.Redis, settings: Settings, user_id: str, forgotten: Forgotten) -> None:
    """The turns' event streams, the sessions' held notices, and the outputs the terminal kept."""
    keys = [events.stream_key(t) for t in forgotten.turn_ids] + [events.notices_key(s) for s in forgotten.session_ids]
    try:
        for start in range(0, len(keys), 500):
            r.delete(*keys[start:start + 500])
    except redis.RedisError as exc:  # the streams expire on their own; the rows are gone already
        log.warning("could not delete the event streams of forgotten turns (%s)", type(exc).__name__)
    outputs = user_root(settings, user_id) / "workspace" / ".hstack" / "outputs"
    for name in forgotten.output_files:
        (outputs / name).unlink(missing_ok=True)
    for path in forgotten.attachment_paths:  # the files the user sent into the forgotten conversations
        try:
            resolve_inside(user_root(settings, user_id) / "workspace", path).unlink(missing_ok=True)
        except (OSError, HermesError):
            continue
