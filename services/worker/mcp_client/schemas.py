"""An MCP server's tools as the model sees them: `mcp_<server>_<tool>` names and schemas of bounded size."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import mcp_types as types

from shared.security.fences import neutralise

DESCRIPTION_CHARS = 400
LISTING_CHARS = 120
NAME_CHARS = 64  # the longest function name OpenAI-compatible providers accept
EMPTY = {"type": "object", "properties": {}}


def model_name(server: str, tool: str) -> str:
    """`mcp_<server>_<tool>` in the characters function names allow; a long one keeps a hash of the rest."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", f"mcp_{server}_{tool}")
    if len(name) <= NAME_CHARS:
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    return f"{name[:NAME_CHARS - 9]}_{digest}"


def bounded(schema: dict[str, Any] | None, max_bytes: int) -> tuple[dict[str, Any], bool]:
    """The input schema, or when larger than `max_bytes` its argument names and types only (True: reduced)."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return dict(EMPTY), schema not in (None, {})
    if len(json.dumps(schema)) <= max_bytes:
        return schema, False
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    slim = {name: _type_only(spec) for name, spec in list(props.items())[:64]}
    reduced = {"type": "object", "properties": slim}
    required = [r for r in schema.get("required", []) if isinstance(r, str) and r in slim]
    if required:
        reduced["required"] = required
    if len(json.dumps(reduced)) > max_bytes:
        reduced = dict(EMPTY)
    return reduced, True


def _type_only(spec: Any) -> dict[str, Any]:
    kind = spec.get("type") if isinstance(spec, dict) else None
    return {"type": kind} if isinstance(kind, str) else {}


def describe(server: str, tool: types.Tool, max_bytes: int) -> dict[str, Any]:
    """What a turn needs to offer and call one tool (stored in Redis beside the server's health)."""
    schema, reduced = bounded(tool.input_schema, max_bytes)
    text = neutralise(" ".join((tool.description or "").split())[:DESCRIPTION_CHARS])  # the server's words
    if reduced:
        text += " (argument details cut: the schema was too large)"
    read_only = bool(tool.annotations and tool.annotations.read_only_hint)
    return {"name": model_name(server, tool.name), "tool": tool.name, "description": text,
            "parameters": schema, "read_only": read_only}


def listing(descriptors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A short line per tool, for `mcp_tools(action=list)`."""
    return [{"name": d["name"], "description": d["description"][:LISTING_CHARS], "read_only": d["read_only"]}
            for d in descriptors]
