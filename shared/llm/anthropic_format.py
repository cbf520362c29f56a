"""OpenAI-format history and tools rewritten as an Anthropic Messages request, with prompt-cache markers."""

from __future__ import annotations

import json

CACHE = {"type": "ephemeral"}
CACHED_MESSAGES = 3


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _image(part: dict) -> dict | None:
    url = (part.get("image_url") or {}).get("url", "")
    if url.startswith("data:") and ";base64," in url:
        media_type, data = url[5:].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    if url:
        return {"type": "image", "source": {"type": "url", "url": url}}
    return None


def _user_blocks(content: object) -> list[dict]:
    if not isinstance(content, list):
        return [{"type": "text", "text": _text_of(content)}] if _text_of(content) else []
    blocks = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "image_url":
            image = _image(part)
            blocks += [image] if image else []
        elif part.get("text"):
            blocks.append({"type": "text", "text": part["text"]})
    return blocks


def _tool_input(arguments: str) -> dict:
    """Anthropic wants an object; a model's malformed arguments are kept as text under `raw_arguments`."""
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {"raw_arguments": arguments}
    return value if isinstance(value, dict) else {"value": value}


def _assistant_blocks(message: dict) -> list[dict]:
    text = _text_of(message.get("content"))
    blocks = [{"type": "text", "text": text}] if text else []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        blocks.append({"type": "tool_use", "id": call.get("id"), "name": function.get("name"),
                       "input": _tool_input(function.get("arguments") or "")})
    return blocks


def _blocks(message: dict) -> tuple[str, list[dict]]:
    """The Anthropic role and content blocks of one OpenAI message."""
    role = message.get("role")
    if role == "tool":
        result = {"type": "tool_result", "tool_use_id": message.get("tool_call_id"),
                  "content": _text_of(message.get("content"))}
        return "user", [result]
    if role == "assistant":
        return "assistant", _assistant_blocks(message)
    return "user", _user_blocks(message.get("content"))


def convert_messages(messages: list[dict]) -> tuple[list[dict], list[dict]]:
    """(system blocks, messages): system text pulled out, tool results folded into user turns, roles merged."""
    system = [{"type": "text", "text": _text_of(m.get("content"))} for m in messages
              if m.get("role") in ("system", "developer") and _text_of(m.get("content"))]
    out: list[dict] = []
    for message in messages:
        if message.get("role") in ("system", "developer"):
            continue
        role, blocks = _blocks(message)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return system, out


def add_cache_markers(system: list[dict], messages: list[dict]) -> None:
    """Mark the system prompt and the last three messages as cache breakpoints (Anthropic allows four)."""
    if system:
        system[-1]["cache_control"] = dict(CACHE)
    for message in messages[-CACHED_MESSAGES:]:
        message["content"][-1]["cache_control"] = dict(CACHE)


def convert_tools(tools: list[dict] | None) -> list[dict]:
    """OpenAI function tools as Anthropic tools."""
    out = []
    for tool in tools or []:
        function = tool.get("function") or tool
        out.append({"name": function.get("name"), "description": function.get("description", ""),
                    "input_schema": function.get("parameters") or {"type": "object", "properties": {}}})
    return out


def build_request(model: str, messages: list[dict], tools: list[dict] | None, max_tokens: int,
                  stream: bool) -> dict:
    """The whole /v1/messages body."""
    system, converted = convert_messages(messages)
    add_cache_markers(system, converted)
    body: dict = {"model": model, "max_tokens": max_tokens, "messages": converted, "stream": stream}
    if system:
        body["system"] = system
    if tools:
        body["tools"] = convert_tools(tools)
    return body
