"""POST /v1/sessions/{id}/turns with `Accept: text/event-stream`: the accepted turn's events in the same response.

Here the broker is a recorder, so the events are published by the test; tests/e2e/test_turns.py runs the real
worker and compares the streamed frames with GET .../events.
"""

from __future__ import annotations

import pytest

from services.api.headers import wants_event_stream
from shared.messaging import events
from shared.stores import turns
from shared.stores.users import hash_key
from tests.services.api.helpers import error_of, frames_of
from tests.support.factories import make_session, make_user

TTL = 60
STREAM = {"Accept": "text/event-stream"}


@pytest.fixture
def session(db, user):
    return make_session(db, user.id)


def publish_run(redis_client, turn_id: str) -> list[str]:
    return [
        events.publish(redis_client, turn_id, "turn.started", {}),
        events.publish(redis_client, turn_id, "message.delta", {"delta": "Hi"}),
        events.publish(redis_client, turn_id, "turn.completed", {"output": "Hi", "usage": {}}, ttl_seconds=TTL),
    ]


def test_a_retried_streaming_post_streams_the_same_turn_from_the_start_and_queues_it_once(
        client, redis_client, user, session, enqueued):
    path, key = f"/v1/sessions/{session.id}/turns", {"Idempotency-Key": "stream-retry-1"}
    first = client.post(path, headers={**user.headers, **key}, json={"input": "hi"})
    assert first.status_code == 202
    ids = publish_run(redis_client, first.json()["id"])
    with client.stream("POST", path, headers={**user.headers, **key, **STREAM}, json={"input": "hi"}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-turn-id"] == first.json()["id"]
        assert response.headers["location"] == f"/v1/turns/{first.json()['id']}"
        frames = frames_of(response.iter_lines())
    assert [f["id"] for f in frames] == ids
    assert [f["event"] for f in frames] == ["turn.started", "message.delta", "turn.completed"]
    assert len(enqueued.calls) == 1


def test_last_event_id_on_a_retried_streaming_post_resumes_after_that_event(client, redis_client, user, session):
    path, key = f"/v1/sessions/{session.id}/turns", {"Idempotency-Key": "stream-retry-2"}
    turn = client.post(path, headers={**user.headers, **key}, json={"input": "hi"}).json()
    ids = publish_run(redis_client, turn["id"])
    headers = {**user.headers, **key, **STREAM, "Last-Event-ID": ids[0]}
    with client.stream("POST", path, headers=headers, json={"input": "hi"}) as response:
        frames = frames_of(response.iter_lines())
    assert [f["id"] for f in frames] == ids[1:]


def test_a_streaming_post_into_another_users_session_is_404_and_holds_no_stream(client, db, api_app, user, enqueued):
    other = make_session(db, make_user(db).id)
    response = client.post(f"/v1/sessions/{other.id}/turns", headers={**user.headers, **STREAM}, json={"input": "x"})
    assert response.status_code == 404
    assert error_of(response)["code"] == "session_not_found"
    assert enqueued.calls == []
    assert api_app.state.stream_slots.open_streams(hash_key(user.key)) == 0


@pytest.mark.parametrize("body, status", [({"input": 7}, 422), ({}, 422), ({"input": "x" * 300_000}, 413)])
def test_a_refused_streaming_post_answers_json_and_gives_its_slot_back(client, api_app, user, session, body, status):
    response = client.post(f"/v1/sessions/{session.id}/turns", headers={**user.headers, **STREAM}, json=body)
    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/json")
    assert api_app.state.stream_slots.open_streams(hash_key(user.key)) == 0


def test_a_malformed_last_event_id_is_refused_before_anything_is_queued(client, user, session, enqueued):
    headers = {**user.headers, **STREAM, "Last-Event-ID": "not-an-id"}
    response = client.post(f"/v1/sessions/{session.id}/turns", headers=headers, json={"input": "x"})
    assert response.status_code == 422
    assert error_of(response)["code"] == "invalid_last_event_id"
    assert enqueued.calls == []


def test_a_key_with_every_stream_slot_taken_gets_429_and_no_turn_is_queued(client, db, api_app, user, session,
                                                                           enqueued):
    slots = api_app.state.stream_slots
    held = [slots.acquire(hash_key(user.key)) for _ in range(slots.cap)]
    try:
        response = client.post(f"/v1/sessions/{session.id}/turns", headers={**user.headers, **STREAM},
                               json={"input": "one too many"})
    finally:
        for slot in held:
            slot.release()
    assert response.status_code == 429
    assert error_of(response)["code"] == "too_many_streams"
    assert enqueued.calls == []
    assert turns.open_turn(db, session.id) is None


@pytest.mark.parametrize("accept, streams", [
    ("text/event-stream", True), ("application/json, text/event-stream", True), ("TEXT/EVENT-STREAM; q=0.5", True),
    ("text/event-stream;q=0", False), ("text/event-stream;q=x", False), ("*/*", False), ("text/*", False),
    ("application/json", False), (None, False), ("", False),
])
def test_only_an_explicit_event_stream_accept_streams(accept, streams):
    assert wants_event_stream(accept) is streams


def test_the_default_stays_the_json_202(client, user, session):
    response = client.post(f"/v1/sessions/{session.id}/turns", headers={**user.headers, "Accept": "*/*"},
                           json={"input": "hello"})
    assert response.status_code == 202 and response.json()["status"] == "queued"


def test_a_long_or_odd_accept_header_still_gets_the_json_202(client, user, session):
    for accept in ("application/json;" + "x" * 4000, "\u00e9/\u00e9".encode(), ";;;,,,", "text/event-stream;q=;;"):
        response = client.post(f"/v1/sessions/{session.id}/turns", headers={**user.headers, "Accept": accept},
                               json={"input": "hello"})
        assert response.status_code == 202
