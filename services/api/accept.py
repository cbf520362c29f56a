"""Accepting a turn: commit the row first, then enqueue its id (a lost enqueue is re-sent by the sweeper).

Only as many turns of one user as MAX_RUNNING_TURNS_PER_USER are sent at once; the rest wait in the
database and are sent by the worker that frees a slot (shared/stores/turn_slots.py).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from services.api.deps import Enqueue
from shared.config import Settings
from shared.db import Database
from shared.errors import PayloadTooLarge
from shared.ops.logs import session_id_var, turn_id_var
from shared.models.turns import Turn
from shared.queue.turns import send_turn
from shared.stores import attachments, turns


def request_hash(body: dict[str, Any], session_id: str) -> str:
    """sha256 of the canonical JSON body plus the session id: what an Idempotency-Key must repeat."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{canonical}\n{session_id}".encode()).hexdigest()


def check_input_size(settings: Settings, text: str) -> None:
    if len(text.encode()) > settings.max_input_bytes:
        raise PayloadTooLarge(f"The input is larger than {settings.max_input_bytes} bytes.")


def accept_turn(
    db: Database,
    enqueue: Enqueue,
    settings: Settings,
    *,
    user_id: str,
    session_id: str,
    text: str,
    attachment_ids: list[str] | None = None,
    idempotency_key: str | None = None,
    body_hash: str | None = None,
    interactive: bool = True,
) -> Turn:
    """Commit a queued turn, then send what the user's free slots allow; a retried Idempotency-Key returns the first turn.

    `interactive=False`: the caller has no channel for an approval question, so none is ever asked.
    `attachment_ids`: files the caller uploaded to this session, carried by the turn (another user's: 404).
    """
    check_input_size(settings, text)
    turn, _, sent = turns.accept_turn(
        db, user_id, session_id, text, idempotency_key=idempotency_key, request_hash=body_hash,
        max_running=settings.max_running_turns_per_user, interactive=interactive,
        attachment_ids=attachments.check_ids(attachment_ids or []),
    )
    announce_turn(enqueue, turn, sent)
    return turn


def announce_turn(enqueue: Enqueue, turn: Turn, sent: list[Turn]) -> None:
    """Name the accepted turn in the logs, then enqueue the turns its transaction marked sent."""
    session_id_var.set(turn.session_id)
    turn_id_var.set(turn.id)
    for ready in sent:
        send_turn(enqueue, ready.id, ready.session_id)
