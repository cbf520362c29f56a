"""What the stack is doing right now: queue depths, turns by status, live services."""

from __future__ import annotations

from collections import Counter

import redis

from shared import heartbeats
from shared.db import Database
from shared.models.turns import TurnStatus
from shared.stores import turns


def turn_counts(db: Database) -> dict[str, int]:
    """Turns by status, every status present (zero when none)."""
    counts = {status.value: 0 for status in TurnStatus}
    counts.update(turns.count_by_status(db))
    return counts


def services_up(r: redis.Redis) -> dict[str, int]:
    """Live instances per service name."""
    return dict(Counter(entry["service"] for entry in heartbeats.alive(r)))
