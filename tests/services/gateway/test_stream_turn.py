"""The gateway's streaming POST: the turn named before its first event, a dropped stream resumed, refusals raised."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from services.gateway.client import ApiClient, ApiError

TURN = "trn_gateway_stream"


def sse(*frames: tuple[str, str, str]) -> bytes:
    return "".join(f"id: {i}\nevent: {kind}\ndata: {data}\n\n" for i, kind, data in frames).encode()


def run(handler) -> tuple[list, list]:
    """Stream one turn through a client whose transport is `handler`: (events, what happened, in order)."""
    happened: list = []

    async def scenario():
        api = ApiClient("http://api.test", "gateway-key")
        api._http = httpx.AsyncClient(base_url="http://api.test", transport=httpx.MockTransport(handler))

        async def accepted(turn_id: str) -> None:
            happened.append(("accepted", turn_id))

        try:
            got = []
            async for event in api.stream_turn("usr_1", "ses_1", "hello", accepted):
                happened.append(("event", event.type))
                got.append(event)
            return got
        finally:
            await api.aclose()

    return asyncio.run(scenario()), happened


def streamed(body: bytes) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream", "x-turn-id": TURN}, content=body)


def test_the_turn_is_named_before_its_first_event_and_one_request_carries_it_all():
    requests = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append((request.method, request.url.path, request.headers["accept"], request.headers["x-act-as-user"]))
        return streamed(sse(("1-0", "turn.started", "{}"), ("2-0", "turn.completed", '{"output": "hi"}')))

    events, happened = run(handler)
    assert happened == [("accepted", TURN), ("event", "turn.started"), ("event", "turn.completed")]
    assert requests == [("POST", "/v1/sessions/ses_1/turns", "text/event-stream", "usr_1")]


def test_a_stream_that_ends_early_goes_on_from_the_last_event_id():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.headers.get("last-event-id")))
        if request.method == "POST":
            return streamed(sse(("1-0", "turn.started", "{}"), ("1-1", "error", '{"code": "stream_broken"}')))
        return streamed(sse(("2-0", "turn.completed", '{"output": "hi"}')))

    events, _ = run(handler)
    assert [e.id for e in events] == ["1-0", "2-0"]
    assert seen == [("POST", None), ("GET", "1-0")]


def test_a_moments_429_is_tried_again_and_a_refusal_is_raised():
    calls = []

    def busy_then_ok(request: httpx.Request) -> httpx.Response:
        calls.append(request.method)
        if len(calls) == 1:
            return httpx.Response(429, headers={"Retry-After": "0"}, json={"error": {"code": "rate_limited"}})
        return streamed(sse(("1-0", "turn.completed", "{}")))

    events, _ = run(busy_then_ok)
    assert [e.type for e in events] == ["turn.completed"] and calls == ["POST", "POST"]

    def refused(request: httpx.Request) -> httpx.Response:
        return httpx.Response(413, json={"error": {"code": "payload_too_large", "message": "too big"}})

    with pytest.raises(ApiError) as caught:
        run(refused)
    assert (caught.value.status, caught.value.code) == (413, "payload_too_large")
