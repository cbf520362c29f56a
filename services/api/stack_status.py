"""What the stack is doing right now: queue depths, turns by status, live services."""

from __future__ import annotations

from collections import Counter

import redis

from services.api.schemas import AdminStatus, RecentTurn
from shared.ops import heartbeats
from shared.config import Settings
from shared.db import Database
from shared.models.turns import TurnStatus
from shared.queue.app import queue_depths
from shared.stores import turns

RECENT_TURNS = 10


def admin_status(db: Database, r: redis.Redis, settings: Settings) -> AdminStatus:
    """Live services, queue depths, turns by status and the latest turns (`/v1/admin/status` and the console)."""
    recent = [RecentTurn.model_validate(t, from_attributes=True) for t in turns.recent_turns(db, limit=RECENT_TURNS)]
    return AdminStatus(services=heartbeats.alive(r), queues=queue_depths(r, settings), turns=turn_counts(db),
                       recent_turns=recent)


def turn_counts(db: Database) -> dict[str, int]:
    """Turns by status, every status present (zero when none)."""
    counts = {status.value: 0 for status in TurnStatus}
    counts.update(turns.count_by_status(db))
    return counts


def services_up(r: redis.Redis) -> dict[str, int]:
    """Live instances per service name."""
    return dict(Counter(entry["service"] for entry in heartbeats.alive(r)))
