"""Per-turn event streams in Redis: `turn:<id>:events`, replayable from the start, then expired."""

from __future__ import annotations

import json
from typing import Any

import redis

TERMINAL_EVENTS = frozenset({"turn.completed", "turn.failed", "turn.cancelled"})
STREAM_MAXLEN = 20_000


def stream_key(turn_id: str) -> str:
    return f"turn:{turn_id}:events"


def publish(r: redis.Redis, turn_id: str, event: str, data: dict[str, Any], *, ttl_seconds: int | None = None) -> str:
    """Append one event; a terminal event also starts the stream's expiry clock."""
    key = stream_key(turn_id)
    payload = {"type": event, "data": json.dumps(data, ensure_ascii=False)}
    if event in TERMINAL_EVENTS and ttl_seconds:
        pipe = r.pipeline(transaction=False)
        pipe.xadd(key, payload, maxlen=STREAM_MAXLEN, approximate=True)
        pipe.expire(key, ttl_seconds)
        return pipe.execute()[0]
    return r.xadd(key, payload, maxlen=STREAM_MAXLEN, approximate=True)


def decode(entry_id: str, fields: dict[str, str]) -> tuple[str, str, dict[str, Any]]:
    """(id, type, data) of one stream entry."""
    return entry_id, fields.get("type", "message"), json.loads(fields.get("data") or "{}")
