"""Refuse text no store can keep, before any route runs: NUL characters and unpaired UTF-16 surrogates.

One rule for every route: Postgres refuses NUL in text and JSON, SQLite's driver and every file
write refuse lone surrogates (JSON can smuggle them in as `\\ud800`), and skill names become file
names. So a request carrying either, anywhere in its path, query string or JSON body, is answered
422 `invalid_text` and nothing runs. Pure ASGI: the body is read once and replayed to the app.
"""

from __future__ import annotations

import json
import re
from collections import deque
from typing import Any
from urllib.parse import unquote_to_bytes

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.api.errors import error_response, is_openai_path
from services.api.uploads import is_upload

CODE = "invalid_text"
# A cheap prefilter on the raw bytes: only bodies holding an escape that could decode to NUL or a
# surrogate are parsed here (raw NUL and raw surrogates are not valid JSON or UTF-8 at all).
_SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MAX_LOCATION_CHARS = 120


def bad_text(value: str) -> str | None:
    """Why this text cannot be stored, or None when it can."""
    if "\x00" in value:
        return "a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "an unpaired UTF-16 surrogate"
    return None


def find_bad_text(value: Any, where: str = "body") -> tuple[str, str] | None:
    """(location, reason) of a key or string that cannot be stored (the shallowest first), or None."""
    queue = deque([(where, value)])
    while queue:
        location, item = queue.popleft()
        if isinstance(item, str):
            reason = bad_text(item)
            if reason:
                return location, reason
        elif isinstance(item, dict):
            for key, child in item.items():
                reason = bad_text(key)
                if reason:
                    return f"{location} (a key)", reason
                queue.append((f"{location}.{key}", child))
        elif isinstance(item, list):
            queue.extend((f"{location}[{i}]", child) for i, child in enumerate(item))
    return None


def _url_problem(scope: Scope) -> tuple[str, str] | None:
    if "\x00" in scope.get("path", ""):
        return "path", "a NUL character"
    if b"\x00" in unquote_to_bytes(scope.get("query_string", b"")):
        return "query", "a NUL character"
    return None


def _body_problem(body: bytes) -> tuple[str, str] | None:
    if not _SUSPECT_ESCAPE.search(body):
        return None
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None  # not JSON this guard can read: the route answers that
    return find_bad_text(value)


class TextGuard:
    """422 invalid_text for a NUL or a lone surrogate in the path, the query string or a JSON body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = _url_problem(scope)
        if problem is None and scope.get("method") in BODY_METHODS and not is_upload(scope):
            messages, body = await _read_body(receive)
            problem = _body_problem(body)
            receive = _replay(messages, receive)
        if problem is not None:
            await _refuse(scope, receive, send, *problem)
            return
        await self.app(scope, receive, send)


async def _read_body(receive: Receive) -> tuple[list[Message], bytes]:
    """Every message of the request body (the body limit outside this guard bounds them)."""
    messages, chunks = [], []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return messages, b"".join(chunks)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return replay


async def _refuse(scope: Scope, receive: Receive, send: Send, location: str, reason: str) -> None:
    """Our 422 (OpenAI's 400 on its routes, as for any invalid request there)."""
    path = scope.get("path", "")
    location = location[:MAX_LOCATION_CHARS]
    shown = "the URL path" if location == "path" else location
    message = f"{shown} holds {reason}; text may not contain NUL characters or unpaired surrogates."
    status = 400 if is_openai_path(path) else 422
    await error_response(path, status, CODE, message, param=location)(scope, receive, send)
