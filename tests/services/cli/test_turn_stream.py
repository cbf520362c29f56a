"""The CLI's streaming POST: one request per turn, a dropped stream resumed, a dropped POST sent again once."""

from __future__ import annotations

import httpx
import pytest

from services.cli.client import ApiClient, CliError

TURN = "trn_stream_cli"


def sse(*frames: tuple[str, str, str]) -> bytes:
    return "".join(f"id: {i}\nevent: {kind}\ndata: {data}\n\n" for i, kind, data in frames).encode()


def client_with(handler) -> ApiClient:
    api = ApiClient("http://api.test", "key-1")
    api._http = httpx.Client(base_url="http://api.test", transport=httpx.MockTransport(handler))
    return api


def stream_response(body: bytes, turn_id: str | None = TURN) -> httpx.Response:
    headers = {"content-type": "text/event-stream", **({"x-turn-id": turn_id} if turn_id else {})}
    return httpx.Response(200, headers=headers, content=body)


def test_a_turn_whose_stream_ends_is_one_post_and_nothing_else():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path, request.headers.get("accept")))
        return stream_response(sse(("1-0", "turn.started", "{}"), ("2-0", "turn.completed", '{"output": "hi"}')))

    events = list(client_with(handler).turn_events("ses_1", "hello"))
    assert [e.type for e in events] == ["turn.started", "turn.completed"]
    assert seen == [("POST", "/v1/sessions/ses_1/turns", "text/event-stream")]


def test_a_stream_that_drops_goes_on_with_get_events_after_the_last_event():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path, request.headers.get("last-event-id")))
        if request.method == "POST":
            return stream_response(sse(("1-0", "turn.started", "{}"), ("2-0", "message.delta", '{"delta": "h"}')))
        return stream_response(sse(("3-0", "turn.completed", '{"output": "h"}')), turn_id=None)

    events = list(client_with(handler).turn_events("ses_1", "hello"))
    assert [e.id for e in events] == ["1-0", "2-0", "3-0"]
    assert seen[1:] == [("GET", f"/v1/turns/{TURN}/events", "2-0")]


def test_a_post_that_got_no_answer_is_sent_once_more_with_the_same_idempotency_key():
    keys = []

    def handler(request: httpx.Request) -> httpx.Response:
        keys.append(request.headers["idempotency-key"])
        if len(keys) == 1:
            raise httpx.ConnectError("connection refused", request=request)
        return stream_response(sse(("1-0", "turn.completed", '{"output": "once"}')))

    events = list(client_with(handler).turn_events("ses_1", "hello"))
    assert [e.type for e in events] == ["turn.completed"]
    assert len(keys) == 2 and keys[0] == keys[1]


def test_an_api_that_never_answers_is_one_readable_error():
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(CliError, match="Cannot reach the api"):
        list(client_with(handler).turn_events("ses_1", "hello"))


def test_a_refused_turn_is_the_apis_own_message():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"error": {"code": "session_not_found", "message": "No such session."}})

    with pytest.raises(CliError, match="No such session"):
        list(client_with(handler).turn_events("ses_1", "hello"))
