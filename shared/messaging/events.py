"""Per-turn event streams in Redis: `turn:<id>:events`, replayable from the start, then expired.

A session's notices (`session:<id>:notices`, a list) hold events that arise between turns, such as a
background review's `review.completed`: they wait there until a turn of the session takes them onto its
own stream, each exactly once, so the client following that turn sees them.
"""

from __future__ import annotations

import json
from typing import Any

import redis

TERMINAL_EVENTS = frozenset({"turn.completed", "turn.failed", "turn.cancelled"})
STREAM_MAXLEN = 20_000
NOTICE_TTL_SECONDS = 7 * 24 * 3600  # a notice nobody took within a week is dropped with the list
MAX_NOTICES = 50


def stream_key(turn_id: str) -> str:
    return f"turn:{turn_id}:events"


def publish(r: redis.Redis, turn_id: str, event: str, data: dict[str, Any], *, ttl_seconds: int | None = None) -> str:
    """Append one event; a terminal event also starts the stream's expiry clock."""
    key = stream_key(turn_id)
    payload = _entry(event, data)
    if event in TERMINAL_EVENTS and ttl_seconds:
        pipe = r.pipeline(transaction=False)
        pipe.xadd(key, payload, maxlen=STREAM_MAXLEN, approximate=True)
        pipe.expire(key, ttl_seconds)
        return pipe.execute()[0]
    return r.xadd(key, payload, maxlen=STREAM_MAXLEN, approximate=True)


def _entry(event: str, data: dict[str, Any]) -> dict[str, str]:
    """A stream entry's fields: the event's type and its data as JSON (what `decode` reads back)."""
    return {"type": event, "data": json.dumps(data, ensure_ascii=False)}


def decode(entry_id: str, fields: dict[str, str]) -> tuple[str, str, dict[str, Any]]:
    """(id, type, data) of one stream entry."""
    return entry_id, fields.get("type", "message"), json.loads(fields.get("data") or "{}")


def notices_key(session_id: str) -> str:
    return f"session:{session_id}:notices"


def hold_notice(r: redis.Redis, session_id: str, event: str, data: dict[str, Any]) -> None:
    """Keep an event for the session's next turn to deliver."""
    key = notices_key(session_id)
    pipe = r.pipeline(transaction=True)
    pipe.rpush(key, json.dumps({"type": event, "data": data}, ensure_ascii=False))
    pipe.ltrim(key, -MAX_NOTICES, -1)
    pipe.expire(key, NOTICE_TTL_SECONDS)
    pipe.execute()


def start_turn(r: redis.Redis, turn_id: str, session_id: str, data: dict[str, Any]) -> int:
    """Publish `turn.started` and take the session's held notices onto the stream, in one round trip."""
    return _deliver(r, session_id, turn_id, started=data)


def deliver_notices(r: redis.Redis, session_id: str, turn_id: str) -> int:
    """Move the session's held notices onto a turn's stream; taken atomically, so each goes out once."""
    return _deliver(r, session_id, turn_id)


def _deliver(r: redis.Redis, session_id: str, turn_id: str, started: dict[str, Any] | None = None) -> int:
    """One MULTI: the `turn.started` XADD when given, then LRANGE + DEL of the held notices (taken atomically,
    so each goes out once); a notice found (rare: a review finished between turns) is published right after."""
    key = notices_key(session_id)
    pipe = r.pipeline(transaction=True)
    if started is not None:
        pipe.xadd(stream_key(turn_id), _entry("turn.started", started), maxlen=STREAM_MAXLEN, approximate=True)
    pipe.lrange(key, 0, -1)
    pipe.delete(key)
    held = pipe.execute()[-2]
    _publish_notices(r, turn_id, held)
    return len(held)


def _publish_notices(r: redis.Redis, turn_id: str, held: list) -> None:
    for raw in held:
        notice = json.loads(raw)
        publish(r, turn_id, notice["type"], notice["data"])
