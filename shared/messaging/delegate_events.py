"""The `delegate.*` events on the parent turn's stream: every child's start and end, so none ends unseen.

`delegate.started` when a child's turn is queued, `delegate.completed` when it answered, `delegate.failed`
when it failed, ran out of budget or time, was cancelled or was refused. Published by whoever settles the
child (its worker or the curator's sweep); a Redis failure is logged, the rows stay the truth.
"""

from __future__ import annotations

import logging
from typing import Any

import redis

from shared.messaging import events
from shared.models.delegations import Delegation, DelegationStatus

log = logging.getLogger(__name__)

PREVIEW_CHARS = 500


def payload(row: Delegation) -> dict[str, Any]:
    data: dict[str, Any] = {"delegation_id": row.id, "task": row.position + 1, "goal": row.goal[:PREVIEW_CHARS],
                            "status": row.status, "child_session_id": row.child_session_id,
                            "child_turn_id": row.child_turn_id}
    if row.summary:
        data["summary"] = row.summary[:PREVIEW_CHARS]
    if row.error:
        data["error"] = row.error
    return data


def event_name(row: Delegation) -> str:
    if row.status == DelegationStatus.running.value:
        return "delegate.started"
    return "delegate.completed" if row.status == DelegationStatus.completed.value else "delegate.failed"


def publish(r: redis.Redis, row: Delegation) -> None:
    """Announce the row's state on its parent turn's stream."""
    try:
        events.publish(r, row.turn_id, event_name(row), payload(row))
    except redis.RedisError as exc:
        log.warning("could not publish %s for %s (%s)", event_name(row), row.id, type(exc).__name__)
