"""The gateway's HTTP client of the api: its own key, acting for one bound user per call (X-Act-As-User)."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable

import httpx

from shared.http.gateway_auth import ACT_AS_HEADER

log = logging.getLogger(__name__)

TERMINAL_EVENTS = frozenset({"turn.completed", "turn.failed", "turn.cancelled"})
STREAM_RECONNECTS = 5
RETRY_DELAYS = (0.5, 1.5)
MAX_RETRY_AFTER_SECONDS = 5
TRANSIENT = frozenset({429})  # the api refused before doing anything: trying again cannot do it twice


class ApiError(Exception):
    """The api answered with an error (status and its stable code)."""

    def __init__(self, status: int, code: str, message: str = "") -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code = status, code


@dataclass(frozen=True)
class Event:
    id: str | None
    type: str
    data: dict[str, Any]


class ApiClient:
    """JSON calls to the api with GATEWAY_API_KEY; every non-2xx becomes ApiError."""

    def __init__(self, base_url: str, key: str, *, timeout: float = 30.0) -> None:
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=50)
        self._http = httpx.AsyncClient(base_url=base_url, headers={"Authorization": f"Bearer {key}"},
                                       timeout=timeout, limits=limits)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def call(self, method: str, path: str, *, user_id: str | None = None, json_body: Any = None,
                   params: dict | None = None) -> Any:
        """One call; a moment's refusal (429 with a short Retry-After, or no connection: nothing was done) is
        tried again a few times before it is raised."""
        headers = {ACT_AS_HEADER: user_id} if user_id else {}
        response = await self._send(self._http.build_request(method, path, json=json_body, params=params,
                                                             headers=headers))
        return response.json() if response.content else None

    async def _send(self, request: httpx.Request, *, stream: bool = False) -> httpx.Response:
        """The response to `request` once its status is a success; a moment's refusal is sent again as `call`
        says, any other raises ApiError."""
        for delay in (*RETRY_DELAYS, None):
            try:
                response = await self._http.send(request, stream=stream)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout):
                if delay is None:
                    raise
                await asyncio.sleep(delay)
                continue
            if response.status_code < 400:
                return response
            await response.aread()
            await response.aclose()
            wait = _transient_wait(response)
            if delay is None or wait is None:
                raise _error(response)
            await asyncio.sleep(max(delay, wait))
        raise AssertionError("unreachable")

    # -- identities and chats ---------------------------------------------------------------------

    async def identify(self, platform: str, platform_user_id: str, display_name: str, *,
                       request_code: bool = True) -> dict:
        body = {"platform": platform, "platform_user_id": platform_user_id, "display_name": display_name[:128],
                "request_code": request_code}
        return await self.call("POST", "/v1/gateway/identities", json_body=body)

    async def chat_session(self, user_id: str, key: str, *, fresh: bool = False) -> str:
        body = {"key": key, "fresh": fresh}
        return (await self.call("POST", f"/v1/gateway/users/{user_id}/chats", json_body=body))["session_id"]

    async def webhook_route(self, name: str) -> dict:
        return await self.call("GET", f"/v1/gateway/webhooks/{name}")

    async def webhook_first_delivery(self, name: str, keys: list[str], ttl_seconds: int) -> bool:
        """Mark a verified request of route `name` as seen for ttl_seconds; False when it was seen before."""
        body = {"keys": keys, "ttl_seconds": ttl_seconds}
        return (await self.call("POST", f"/v1/gateway/webhooks/{name}/deliveries", json_body=body))["first"]

    # -- turns, as the user ---------------------------------------------------------------------------

    async def create_turn(self, user_id: str, session_id: str, text: str,
                          attachments: list[str] | None = None) -> dict:
        """A turn of the session with `text` and the ids of files uploaded to it first (`upload`)."""
        return await self.call("POST", f"/v1/sessions/{session_id}/turns", user_id=user_id,
                               json_body=_turn_body(text, attachments))

    # -- files, as the user ---------------------------------------------------------------------------

    async def upload(self, user_id: str, session_id: str, filename: str, chunks: AsyncIterator[bytes]) -> dict:
        """Stream a file into the session's attachments: `{id, kind, filename, mime, size, path}`. Never retried:
        the body is a stream that cannot be replayed (the caller asks the sender to try again)."""
        headers = {ACT_AS_HEADER: user_id, "X-Filename": _header_safe(filename),
                   "Content-Type": "application/octet-stream"}
        response = await self._http.post(f"/v1/sessions/{session_id}/attachments", content=chunks, headers=headers,
                                         timeout=httpx.Timeout(30.0, read=300.0, write=300.0))
        if response.status_code >= 400:
            raise _error(response)
        return response.json()

    async def attachment(self, user_id: str, attachment_id: str) -> dict:
        return await self.call("GET", f"/v1/attachments/{attachment_id}", user_id=user_id)

    async def attachment_bytes(self, user_id: str, attachment_id: str, limit: int) -> bytes:
        """The file's bytes (at most `limit`: a bot upload is bounded), read as the user who owns it."""
        headers = {ACT_AS_HEADER: user_id}
        async with self._http.stream("GET", f"/v1/attachments/{attachment_id}/content", headers=headers,
                                     timeout=httpx.Timeout(30.0, read=120.0)) as response:
            if response.status_code >= 400:
                await response.aread()
                raise _error(response)
            data = bytearray()
            async for chunk in response.aiter_bytes():
                data += chunk
                if len(data) > limit:
                    raise ApiError(413, "attachment_too_large", f"over {limit} bytes")
            return bytes(data)

    async def turn(self, user_id: str, turn_id: str) -> dict:
        return await self.call("GET", f"/v1/turns/{turn_id}", user_id=user_id)

    async def forget_session(self, user_id: str, session_id: str) -> dict:
        return await self.call("DELETE", f"/v1/sessions/{session_id}", user_id=user_id)

    async def cancel(self, user_id: str, turn_id: str) -> dict:
        return await self.call("POST", f"/v1/turns/{turn_id}/cancel", user_id=user_id)

    async def decide(self, user_id: str, approval_id: str, decision: str, scope: str = "once") -> dict:
        body = {"decision": decision, "scope": scope}
        return await self.call("POST", f"/v1/approvals/{approval_id}", user_id=user_id, json_body=body)

    async def questions(self, user_id: str) -> dict:
        return await self.call("GET", "/v1/clarifications", user_id=user_id)

    async def answer(self, user_id: str, clarification_id: str, choice: str) -> dict:
        return await self.call("POST", f"/v1/clarifications/{clarification_id}", user_id=user_id,
                               json_body={"choice": choice})

    async def stream_turn(self, user_id: str, session_id: str, text: str, on_accepted: Callable[[str], Awaitable[None]],
                          attachments: list[str] | None = None) -> AsyncIterator[Event]:
        """Post a turn with `Accept: text/event-stream` and yield its events from the same response: one request
        where a POST then a GET took two. `on_accepted(turn_id)` runs as soon as the api named the turn (its
        X-Turn-Id header), before any event. A refusal raises ApiError as `create_turn` does (a moment's 429 or
        no connection is tried again first: nothing was done); a stream that drops goes on with `events` from
        the last event id."""
        path = f"/v1/sessions/{session_id}/turns"
        headers = {ACT_AS_HEADER: user_id, "Accept": "text/event-stream"}
        request = self._http.build_request("POST", path, json=_turn_body(text, attachments), headers=headers,
                                           timeout=httpx.Timeout(30.0, read=120.0))
        response = await self._send(request, stream=True)
        turn_id, relay = response.headers.get("x-turn-id"), _Relay(None)
        try:
            if not turn_id:
                raise ApiError(502, "no_turn_id", "The api streamed a turn without naming it.")
            await on_accepted(turn_id)
            async for event in relay.read(response):
                yield event
            if relay.ended:
                return
        except httpx.TransportError as exc:
            log.warning("the streamed turn %s dropped (%s); resuming", turn_id, type(exc).__name__)
        finally:
            await response.aclose()
        async for event in self.events(user_id, turn_id, after=relay.last_id):
            yield event

    async def events(self, user_id: str, turn_id: str, *, after: str | None = None) -> AsyncIterator[Event]:
        """The turn's events (after the event id `after`, else from the start) to its terminal one, resuming
        with Last-Event-ID when the stream drops."""
        relay = _Relay(after)
        for _attempt in range(STREAM_RECONNECTS):
            headers = {ACT_AS_HEADER: user_id, **({"Last-Event-ID": relay.last_id} if relay.last_id else {})}
            try:
                async with self._http.stream("GET", f"/v1/turns/{turn_id}/events", headers=headers,
                                             timeout=httpx.Timeout(30.0, read=120.0)) as response:
                    if response.status_code >= 400:
                        await response.aread()
                        raise _error(response)
                    async for event in relay.read(response):
                        yield event
                    if relay.ended:
                        return
            except httpx.TransportError as exc:
                log.warning("event stream of %s dropped (%s); resuming", turn_id, type(exc).__name__)

    # -- the outbox -------------------------------------------------------------------------------------

    async def outbox_record(self, user_id: str, target: str, chat_id: str, text: str | None,
                            turn_id: str | None) -> dict:
        body = {"target": target, "chat_id": chat_id, "text": text, "turn_id": turn_id}
        return await self.call("POST", f"/v1/gateway/users/{user_id}/outbox", json_body=body)

    async def outbox_due(self) -> list[dict]:
        return await self.call("GET", "/v1/gateway/outbox/due")

    async def outbox_awaiting(self) -> list[dict]:
        return await self.call("GET", "/v1/gateway/outbox/awaiting")

    async def outbox_fill(self, item_id: str, text: str) -> dict:
        return await self.call("POST", f"/v1/gateway/outbox/{item_id}/text", json_body={"text": text})

    async def outbox_report(self, item_id: str, ok: bool, error: str | None = None,
                            retry_in: float | None = None, give_up: bool = False) -> dict:
        body = {"ok": ok, "error": (error or None) and error[:500], "retry_in_seconds": retry_in, "give_up": give_up}
        return await self.call("POST", f"/v1/gateway/outbox/{item_id}", json_body=body)


def _turn_body(text: str, attachments: list[str] | None) -> dict[str, Any]:
    """A turn's JSON body: the text, and the ids of its files when it has any."""
    return {"input": text, **({"attachments": attachments} if attachments else {})}


def _header_safe(name: str) -> str:
    """A file name fit for an HTTP header (the api sanitises it again): printable ASCII, bounded."""
    cleaned = "".join(c if 32 <= ord(c) < 127 else "_" for c in name).strip()
    return cleaned[:255] or "file"


def _transient_wait(response: httpx.Response) -> float | None:
    """Seconds to wait before trying a refused call again, or None when trying again would not help."""
    if response.status_code not in TRANSIENT:
        return None
    retry = response.headers.get("Retry-After", "0").strip()
    wait = int(retry) if retry.isascii() and retry.isdigit() and len(retry) < 6 else 0
    return None if wait > MAX_RETRY_AFTER_SECONDS else float(wait)


def _error(response: httpx.Response) -> ApiError:
    try:
        error = response.json().get("error", {})
    except (ValueError, AttributeError):
        error = {}
    return ApiError(response.status_code, error.get("code", "http_error"), error.get("message", ""))


class _Relay:
    """One turn's SSE events read across the responses that carry them: the last event id seen (where a
    reconnect resumes) and whether the terminal event came. An `error` event ends a response early."""

    def __init__(self, last_id: str | None) -> None:
        self.last_id = last_id
        self.ended = False

    async def read(self, response: httpx.Response) -> AsyncIterator[Event]:
        async for event in _parse_sse(response.aiter_lines()):
            if event.type == "error":
                return
            self.last_id = event.id or self.last_id
            yield event
            if event.type in TERMINAL_EVENTS:
                self.ended = True
                return


async def _parse_sse(lines: AsyncIterator[str]) -> AsyncIterator[Event]:
    event_id, kind, data = None, "message", []
    async for line in lines:
        if line == "":
            if data:
                try:
                    payload = json.loads("\n".join(data))
                except ValueError:
                    payload = {}
                yield Event(event_id, kind, payload if isinstance(payload, dict) else {"value": payload})
            event_id, kind, data = None, "message", []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "id":
                event_id = value
            elif field == "event":
                kind = value
            elif field == "data":
                data.append(value)
