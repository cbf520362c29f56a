"""Each MCP server's health and tool list, kept in Redis by the worker that last reached it.

The api, the CLI and the console read it to show a server's state, tool count and last error; a turn reads
the tool list to offer a server's tools without reconnecting. A server's key is its scope ("global" for the
owner's, else the user id) and name.
"""

from __future__ import annotations

import json
import time
from typing import Any

import redis

HEALTH_TTL_SECONDS = 30 * 24 * 3600
LOADED_TTL_SECONDS = 7 * 24 * 3600
ERROR_CHARS = 500


def _key(kind: str, scope: str, name: str) -> str:
    return f"mcp:{kind}:{scope}:{name}"


def record(r: redis.Redis, scope: str, name: str, state: str, *, tools: int | None = None,
           error: str | None = None) -> None:
    """Store what a connection attempt or call found: `ready` clears the error and marks the server seen."""
    now = time.time()
    fields: dict[str, Any] = {"state": state, "checked_at": now}
    if tools is not None:
        fields["tools"] = tools
    if state == "ready":
        fields["last_seen"] = now
        fields["last_error"] = ""
    if error is not None:
        fields["last_error"] = error[:ERROR_CHARS]
    key = _key("health", scope, name)
    pipe = r.pipeline()
    pipe.hset(key, mapping={k: str(v) for k, v in fields.items()})
    pipe.expire(key, HEALTH_TTL_SECONDS)
    pipe.execute()


def read(r: redis.Redis, scope: str, name: str) -> dict[str, Any]:
    """state, tools, last_error, last_seen, checked_at of one server ("unknown" before any attempt)."""
    raw = {_text(k): _text(v) for k, v in r.hgetall(_key("health", scope, name)).items()}
    return {
        "state": raw.get("state") or "unknown",
        "tools": int(raw.get("tools") or 0),
        "last_error": raw.get("last_error") or None,
        "last_seen": float(raw["last_seen"]) if raw.get("last_seen") else None,
        "checked_at": float(raw["checked_at"]) if raw.get("checked_at") else None,
    }


def forget(r: redis.Redis, scope: str, name: str) -> None:
    r.delete(_key("health", scope, name), _key("tools", scope, name))


def store_tools(r: redis.Redis, scope: str, name: str, tools: list[dict[str, Any]]) -> None:
    """The server's tools as the model will see them (already bounded by the worker)."""
    r.set(_key("tools", scope, name), json.dumps(tools), ex=HEALTH_TTL_SECONDS)


def tools_of(r: redis.Redis, scope: str, name: str) -> list[dict[str, Any]] | None:
    raw = r.get(_key("tools", scope, name))
    return None if raw is None else json.loads(raw)


def load_into(r: redis.Redis, session_id: str, server: str, tools: list[str]) -> None:
    """Remember that `server`'s `tools` are loaded into a session (its next model calls offer them)."""
    key = f"mcp:loaded:{session_id}"
    r.hset(key, server, json.dumps(sorted(set(tools))))
    r.expire(key, LOADED_TTL_SECONDS)


def loaded(r: redis.Redis, session_id: str) -> dict[str, list[str]]:
    """server -> tool names loaded into this session."""
    return {_text(k): json.loads(v) for k, v in r.hgetall(f"mcp:loaded:{session_id}").items()}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
