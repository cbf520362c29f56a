"""The SSE event stream of a turn: replay, resume, live follow, and the end rebuilt from the database."""

from __future__ import annotations

import json

import httpx
import pytest

from shared.messaging import events
from shared.models.turns import TurnStatus
from shared.stores import turns
from tests.services.api.helpers import EnqueueRecorder
from tests.support.factories import make_session, make_user
from tests.support.live import serve_api

TTL = 60


def read_frames(response: httpx.Response) -> list[dict]:
    """The frames of an SSE response until it ends: {"id", "event", "data"} dicts, comments as {"comment"}."""
    frames, frame = [], {}
    for line in response.iter_lines():
        if not line:
            if frame:
                frames.append(frame)
            frame = {}
        elif line.startswith(":"):
            frames.append({"comment": line[1:].strip()})
        else:
            key, _, value = line.partition(": ")
            frame[key] = json.loads(value) if key == "data" else value
    return frames


@pytest.fixture
def turn(db, user):
    session = make_session(db, user.id)
    created, _ = turns.create_turn(db, user.id, session.id, "tell me")
    return created


def publish_run(redis_client, turn_id: str) -> list[str]:
    return [
        events.publish(redis_client, turn_id, "turn.started", {}),
        events.publish(redis_client, turn_id, "message.delta", {"delta": "Hel"}),
        events.publish(redis_client, turn_id, "message.delta", {"delta": "lo"}),
        events.publish(redis_client, turn_id, "turn.completed", {"output": "Hello", "usage": {}}, ttl_seconds=TTL),
    ]


def test_a_late_subscriber_replays_every_event_from_the_start(client, redis_client, user, turn):
    ids = publish_run(redis_client, turn.id)
    with client.stream("GET", f"/v1/turns/{turn.id}/events", headers=user.headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-accel-buffering"] == "no"
        frames = read_frames(response)
    assert [f["id"] for f in frames] == ids
    assert [f["event"] for f in frames] == ["turn.started", "message.delta", "message.delta", "turn.completed"]
    assert "".join(f["data"].get("delta", "") for f in frames) == "Hello"


def test_text_holding_unicode_line_separators_reaches_a_line_splitting_client_intact(client, redis_client, user, turn):
    """U+2028, U+2029 and U+0085 go out escaped: httpx's iter_lines (the CLI's and the gateway's reader) ends a
    line at each, and the frame's JSON arrived cut in two."""
    text = "one\u2028two\u2029three\u0085four"
    events.publish(redis_client, turn.id, "message.delta", {"delta": text})
    events.publish(redis_client, turn.id, "turn.completed", {"output": text, "usage": {}}, ttl_seconds=TTL)
    with client.stream("GET", f"/v1/turns/{turn.id}/events", headers=user.headers) as response:
        frames = read_frames(response)
    assert [f["data"] for f in frames if f.get("event") == "message.delta"] == [{"delta": text}]


@pytest.mark.parametrize("how", ["header", "query"])
def test_last_event_id_resumes_after_that_event(client, redis_client, user, turn, how):
    ids = publish_run(redis_client, turn.id)
    headers, params = dict(user.headers), {}
    if how == "header":
        headers["Last-Event-ID"] = ids[1]
    else:
        params["last_event_id"] = ids[1]
    with client.stream("GET", f"/v1/turns/{turn.id}/events", headers=headers, params=params) as response:
        frames = read_frames(response)
    assert [f["id"] for f in frames] == ids[2:]


def test_a_live_subscriber_sees_events_as_they_are_published(client, redis_client, user, turn):
    with client.stream("GET", f"/v1/turns/{turn.id}/events", headers=user.headers) as response:
        assert response.status_code == 200  # subscribed: the stream is read from its start
        ids = publish_run(redis_client, turn.id)
        frames = read_frames(response)
    assert [f["id"] for f in frames] == ids


def test_a_finished_turn_whose_stream_expired_ends_with_its_row(client, db, user, turn):
    claimed = turns.claim_next(db, turn.session_id, "test-worker", lease_seconds=30)
    assert claimed.id == turn.id
    turns.finish_turn(db, turn.id, "test-worker", TurnStatus.completed, output="All done.",
                      usage={"prompt_tokens": 3, "completion_tokens": 2})
    with client.stream("GET", f"/v1/turns/{turn.id}/events", headers=user.headers) as response:
        frames = read_frames(response)
    assert [f["event"] for f in frames] == ["turn.completed"]
    assert frames[0]["data"] == {"output": "All done.", "usage": {"prompt_tokens": 3, "completion_tokens": 2}}


def test_a_turn_cancelled_while_queued_ends_its_stream(client, db, user, turn):
    with client.stream("GET", f"/v1/turns/{turn.id}/events", headers=user.headers) as response:
        assert client.post(f"/v1/turns/{turn.id}/cancel", headers=user.headers).status_code == 202
        frames = read_frames(response)
    assert [f["event"] for f in frames] == ["turn.cancelled"]


def test_a_failed_turn_is_rebuilt_with_its_error(client, db, user, turn):
    turns.claim_next(db, turn.session_id, "test-worker", lease_seconds=30)
    turns.finish_turn(db, turn.id, "test-worker", TurnStatus.failed, error_code="model_unavailable",
                      error_message="The model kept failing.")
    with client.stream("GET", f"/v1/turns/{turn.id}/events", headers=user.headers) as response:
        frames = read_frames(response)
    assert frames == [{"id": frames[0]["id"], "event": "turn.failed",
                       "data": {"error": {"code": "model_unavailable", "message": "The model kept failing."}}}]


def test_a_malformed_last_event_id_is_refused(client, user, turn):
    response = client.get(f"/v1/turns/{turn.id}/events", headers={**user.headers, "Last-Event-ID": "not-an-id"})
    assert response.status_code == 422


def test_an_idle_stream_sends_keepalive_comments_until_the_end(settings, redis_client, user, turn):
    from services.api.main import create_app

    app = create_app(settings.model_copy(update={"sse_keepalive_seconds": 0.1}))
    with serve_api(app) as base, httpx.Client(base_url=base, headers=user.headers, timeout=10) as http:
        with http.stream("GET", f"/v1/turns/{turn.id}/events") as response:
            lines = response.iter_lines()
            assert next(line for line in lines if line) == ": keepalive"
            events.publish(redis_client, turn.id, "turn.completed", {"output": "late", "usage": {}}, ttl_seconds=TTL)
            rest = list(lines)
    assert "event: turn.completed" in rest


def test_a_turn_just_posted_streams_to_its_owner_and_is_not_found_for_anyone_else(client, db, redis_client, user):
    """The stream of a turn this process just accepted opens without reading the row again: only for its owner."""
    session = make_session(db, user.id)
    posted = client.post(f"/v1/sessions/{session.id}/turns", headers=user.headers, json={"input": "mine"}).json()
    stranger = make_user(db)

    refused = client.get(f"/v1/turns/{posted['id']}/events", headers=stranger.headers)
    with client.stream("GET", f"/v1/turns/{posted['id']}/events", headers=user.headers) as response:
        ids = publish_run(redis_client, posted["id"])
        frames = read_frames(response)

    assert refused.status_code == 404 and refused.json()["error"]["code"] == "turn_not_found"
    assert [f["id"] for f in frames] == ids


def test_a_turn_just_posted_that_ends_without_publishing_its_end_still_ends_its_stream(settings, db, user):
    """Its worker finished the row, then died before publishing: the idle stream reads the row and ends."""
    from services.api.main import create_app

    app = create_app(settings.model_copy(update={"sse_keepalive_seconds": 0.1}))
    app.state.enqueue = EnqueueRecorder(db)
    session = make_session(db, user.id)
    with serve_api(app) as base, httpx.Client(base_url=base, headers=user.headers, timeout=10) as http:
        posted = http.post(f"/v1/sessions/{session.id}/turns", json={"input": "finish quietly"}).json()
        turns.claim_next(db, session.id, "test-worker", lease_seconds=30)
        turns.finish_turn(db, posted["id"], "test-worker", TurnStatus.completed, output="Done.", usage={})
        with http.stream("GET", f"/v1/turns/{posted['id']}/events") as response:
            frames = [f for f in read_frames(response) if "event" in f]

    assert [f["event"] for f in frames] == ["turn.completed"] and frames[0]["data"]["output"] == "Done."
