"""The CLI's HTTP client of the api: where it is, which key to send, errors a person can read."""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from typing import Any, Iterator

import httpx
from dotenv import dotenv_values

from shared.config import dotenv_path, load_settings

TERMINAL_EVENTS = frozenset({"turn.completed", "turn.failed", "turn.cancelled"})
STREAM_RECONNECTS = 3
RECONNECT_DELAY_SECONDS = 0.5
STREAM_IDLE_SECONDS = 90.0  # the api sends a keep-alive at least every 60 s, so silence this long is a dead link


class CliError(Exception):
    """A failure the CLI prints as one readable line and exits non-zero on."""


@dataclass(frozen=True)
class Event:
    """One server-sent event of a turn."""

    id: str | None
    type: str
    data: dict[str, Any]


def base_url() -> str:
    """HSTACK_URL, else the local api on API_PORT (environment or `.env`)."""
    url = os.environ.get("HSTACK_URL")
    if url:
        return url.rstrip("/")
    return f"http://127.0.0.1:{load_settings().api_port}"


def admin_key(flag: str | None) -> str:
    """The admin key from `--admin-key`, else ADMIN_API_KEY from the environment or `.env`."""
    key = flag or _secret(load_settings().admin_api_key)
    if not key:
        raise CliError("No admin key: pass --admin-key or set ADMIN_API_KEY (`hstack run` writes it to .env).")
    return key


def user_key(flag: str | None) -> str:
    """A user's key from `--key`, else HSTACK_API_KEY from the environment or `.env`."""
    key = flag or os.environ.get("HSTACK_API_KEY") or dotenv_values(dotenv_path()).get("HSTACK_API_KEY")
    if not key:
        raise CliError("No API key: pass --key or set HSTACK_API_KEY (create one with `hstack users create NAME`).")
    return key


def _secret(value) -> str | None:
    return value.get_secret_value() if value is not None else None


class ApiClient:
    """A thin JSON client; every failure becomes a CliError with the api's own message."""

    def __init__(self, url: str, key: str, *, timeout: float = 30.0) -> None:
        self.url = url
        self._http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "ApiClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def get(self, path: str, **params) -> Any:
        return self._call("GET", path, params=params or None)

    def text(self, path: str) -> str:
        """A plain-text answer (GET /metrics), with the same errors as `get`."""
        try:
            response = self._http.get(path)
        except httpx.TransportError as exc:
            raise CliError(self.unreachable()) from exc
        if response.status_code >= 400:
            raise CliError(describe_error(response))
        return response.text

    def post(self, path: str, body: dict | None = None, *, headers: dict | None = None) -> Any:
        return self._call("POST", path, json=body if body is not None else {}, headers=headers)

    def patch(self, path: str, body: dict) -> Any:
        return self._call("PATCH", path, json=body)

    def delete(self, path: str) -> Any:
        return self._call("DELETE", path)

    def _call(self, method: str, path: str, **kwargs) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise CliError(self.unreachable()) from exc
        if response.status_code >= 400:
            raise CliError(describe_error(response))
        return response.json() if response.content else None

    def unreachable(self) -> str:
        return f"Cannot reach the api at {self.url}. Is `hstack run` running? Set HSTACK_URL if it runs elsewhere."

    def turn_events(self, session_id: str, text: str) -> Iterator[Event]:
        """Post a turn and read its events in the same response (`Accept: text/event-stream`), to its terminal one.

        One request instead of a POST then a GET, so the answer starts a round trip sooner. The turn's id comes
        in the X-Turn-Id header; a stream that drops after it goes on with GET .../events from the last event
        id, and a POST that got no answer is sent once more with the same Idempotency-Key, so the turn runs once.
        """
        headers = {"Idempotency-Key": uuid.uuid4().hex, "Accept": "text/event-stream"}
        path = f"/v1/sessions/{session_id}/turns"
        opened: dict[str, str] = {}
        last_id: str | None = None
        for attempt in (1, 2):
            try:
                for event in self._stream(path, headers, method="POST", body={"input": text}, opened=opened):
                    last_id = event.id or last_id
                    yield event
                    if event.type in TERMINAL_EVENTS:
                        return
                break
            except httpx.TransportError as exc:
                if "turn_id" in opened:
                    break
                if attempt == 2:
                    raise CliError(self.unreachable()) from exc
        if "turn_id" not in opened:
            raise CliError("The api answered the turn without naming it (no X-Turn-Id header).")
        yield from self.events(opened["turn_id"], after=last_id)

    def events(self, turn_id: str, *, after: str | None = None) -> Iterator[Event]:
        """The turn's events from the start (or after the event id `after`) until its terminal one, resuming after
        dropped connections."""
        last_id: str | None = after
        failures = 0
        while True:
            headers = {"Last-Event-ID": last_id} if last_id else {}
            problem = "the server closed it before the turn ended"
            try:
                for event in self._stream(f"/v1/turns/{turn_id}/events", headers):
                    failures = 0
                    last_id = event.id or last_id
                    yield event
                    if event.type in TERMINAL_EVENTS:
                        return
            except httpx.TransportError as exc:
                problem = str(exc) or type(exc).__name__
            failures += 1
            if failures > STREAM_RECONNECTS:
                raise CliError(f"Lost the event stream of turn {turn_id}: {problem}.")
            time.sleep(RECONNECT_DELAY_SECONDS * failures)

    def _stream(self, path: str, headers: dict, *, method: str = "GET", body: dict | None = None,
                opened: dict[str, str] | None = None) -> Iterator[Event]:
        """The SSE events of one request; `opened` gets the turn id its X-Turn-Id header names."""
        timeout = httpx.Timeout(30.0, read=STREAM_IDLE_SECONDS)
        with self._http.stream(method, path, headers=headers, json=body, timeout=timeout) as response:
            if response.status_code >= 400:
                response.read()
                raise CliError(describe_error(response))
            if opened is not None and response.headers.get("x-turn-id"):
                opened["turn_id"] = response.headers["x-turn-id"]
            yield from parse_sse(response.iter_lines())


def parse_sse(lines: Iterator[str]) -> Iterator[Event]:
    """Server-sent event frames to Events (comments and keep-alives skipped)."""
    frame: dict[str, list[str]] = {}
    for line in lines:
        if not line:
            if "event" in frame or "data" in frame:
                yield _event(frame)
            frame = {}
            continue
        if line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        frame.setdefault(key, []).append(value[1:] if value.startswith(" ") else value)
    if "event" in frame or "data" in frame:
        yield _event(frame)


def _event(frame: dict[str, list[str]]) -> Event:
    raw = "\n".join(frame.get("data", []))
    try:
        data = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        data = {"raw": raw}
    ids = frame.get("id")
    return Event(id=ids[-1] if ids else None, type=(frame.get("event") or ["message"])[-1], data=data)


def describe_error(response: httpx.Response) -> str:
    """`message (code, HTTP status)` from the api's error body, whatever its shape."""
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        message = error.get("message") or response.reason_phrase
        code = error.get("code") or error.get("type") or "error"
    else:
        message = (body.get("detail") if isinstance(body, dict) else None) or response.text[:200] or response.reason_phrase
        code = "error"
    hint = " Check the key." if response.status_code == 401 else ""
    return f"{message} ({code}, HTTP {response.status_code}).{hint}"
