"""Turns: accepted as 202 after the row is committed, idempotent on retry, cancellable, bounded in size."""

from __future__ import annotations

import httpx
import pytest

from services.api.main import create_app
from shared.queue.names import RUN_TURN
from shared.stores import turns
from tests.services.api.helpers import error_of
from tests.support.factories import make_session, make_user
from tests.support.live import serve_api


@pytest.fixture
def session(db, user):
    return make_session(db, user.id)


def test_a_turn_is_committed_queued_then_enqueued(client, db, user, session, enqueued):
    response = client.post(f"/v1/sessions/{session.id}/turns", headers=user.headers, json={"input": "hello"})
    assert response.status_code == 202
    turn = response.json()
    assert turn["status"] == "queued" and turn["input"] == "hello" and turn["session_id"] == session.id
    assert response.headers["location"] == f"/v1/turns/{turn['id']}"
    # the recorder read the row from the database while it was being enqueued: it was already committed
    assert enqueued.calls == [(RUN_TURN, {"turn_id": turn["id"], "session_id": session.id}, "queued")]
    assert turns.get_turn(db, user.id, turn["id"]).status == "queued"
    assert client.get(f"/v1/turns/{turn['id']}", headers=user.headers).json() == turn


def test_an_idempotent_retry_returns_the_same_turn_and_enqueues_once(client, user, session, enqueued):
    path, headers = f"/v1/sessions/{session.id}/turns", {**user.headers, "Idempotency-Key": "retry-1"}
    first = client.post(path, headers=headers, json={"input": "once"})
    again = client.post(path, headers=headers, json={"input": "once"})
    assert first.status_code == again.status_code == 202
    assert again.json()["id"] == first.json()["id"]
    assert len(enqueued.calls) == 1

    reused = client.post(path, headers=headers, json={"input": "something else"})
    assert reused.status_code == 409
    assert error_of(reused)["code"] == "idempotency_key_reused"


def test_the_same_key_on_another_session_is_a_conflict(client, db, user, session):
    other = make_session(db, user.id)
    headers = {**user.headers, "Idempotency-Key": "shared-key"}
    assert client.post(f"/v1/sessions/{session.id}/turns", headers=headers, json={"input": "a"}).status_code == 202
    response = client.post(f"/v1/sessions/{other.id}/turns", headers=headers, json={"input": "a"})
    assert response.status_code == 409
    assert error_of(response)["code"] == "idempotency_key_reused"


def test_an_overlong_idempotency_key_is_refused(client, user, session):
    headers = {**user.headers, "Idempotency-Key": "k" * 256}
    response = client.post(f"/v1/sessions/{session.id}/turns", headers=headers, json={"input": "a"})
    assert response.status_code == 422
    assert "idempotency-key" in error_of(response)["message"]


def test_a_broker_outage_still_accepts_the_turn(client, api_app, db, user, session):
    def broker_down(name, payload):
        raise ConnectionError("broker unreachable")

    api_app.state.enqueue = broker_down
    response = client.post(f"/v1/sessions/{session.id}/turns", headers=user.headers, json={"input": "later"})
    assert response.status_code == 202
    assert turns.get_turn(db, user.id, response.json()["id"]).status == "queued"


def test_malformed_json_is_400(client, user, session):
    response = client.post(f"/v1/sessions/{session.id}/turns", headers={**user.headers, "Content-Type": "application/json"},
                           content=b'{"input": "unterminated')
    assert response.status_code == 400
    assert error_of(response)["code"] == "malformed_json"


@pytest.mark.parametrize(
    "body, field",
    [({"input": "x", "priority": 1}, "priority"), ({}, "input"), ({"input": ""}, "input"), ({"input": 5}, "input")],
)
def test_invalid_bodies_are_422_naming_the_field(client, user, session, body, field):
    response = client.post(f"/v1/sessions/{session.id}/turns", headers=user.headers, json=body)
    assert response.status_code == 422
    error = error_of(response)
    assert error["code"] == "invalid_request" and error["message"].startswith(f"{field}:")


def test_a_body_that_is_not_json_is_explained(client, user, session):
    response = client.post(f"/v1/sessions/{session.id}/turns", headers=user.headers, data={"input": "form"})
    assert response.status_code == 422
    assert "application/json" in error_of(response)["message"]


def test_unknown_and_foreign_ids_are_not_found(client, db, user, session):
    theirs = make_user(db)
    their_session = make_session(db, theirs.id)
    their_turn, _ = turns.create_turn(db, theirs.id, their_session.id, "private")
    cases = [
        ("POST", "/v1/sessions/ses_missing/turns", {"input": "x"}),
        ("POST", f"/v1/sessions/{their_session.id}/turns", {"input": "x"}),
        ("GET", "/v1/turns/turn_missing", None),
        ("GET", f"/v1/turns/{their_turn.id}", None),
        ("POST", f"/v1/turns/{their_turn.id}/cancel", None),
        ("GET", f"/v1/turns/{their_turn.id}/events", None),
    ]
    for method, path, body in cases:
        response = client.request(method, path, headers=user.headers, json=body)
        assert response.status_code == 404, path
        assert error_of(response)["code"] in {"session_not_found", "turn_not_found"}
    assert turns.get_turn(db, None, their_turn.id).status == "queued"


def test_cancel_a_queued_turn_then_again(client, db, user, session):
    turn = client.post(f"/v1/sessions/{session.id}/turns", headers=user.headers, json={"input": "stop me"}).json()
    cancelled = client.post(f"/v1/turns/{turn['id']}/cancel", headers=user.headers)
    assert cancelled.status_code == 202
    assert cancelled.json()["status"] == "cancelled"
    assert turns.get_turn(db, user.id, turn["id"]).status == "cancelled"

    again = client.post(f"/v1/turns/{turn['id']}/cancel", headers=user.headers)
    assert again.status_code == 409
    assert error_of(again)["code"] == "turn_finished"


def test_bodies_over_the_limit_are_413(settings, db, user, session):
    small = create_app(settings.model_copy(update={"max_input_bytes": 64}))
    small.state.enqueue = lambda name, payload: None
    path = f"/v1/sessions/{session.id}/turns"
    with serve_api(small) as base, httpx.Client(base_url=base, headers=user.headers) as http:
        assert http.post(path, json={"input": "fits"}).status_code == 202
        declared = http.post(path, json={"input": "x" * 100})
        chunks = (part for part in [b'{"input": "', b"y" * 100, b'"}'])
        streamed = http.post(path, content=chunks, headers={"Content-Type": "application/json"})
        for response in (declared, streamed):
            assert response.status_code == 413
            assert error_of(response)["code"] == "payload_too_large"
    assert "y" * 100 not in [t.input for t in turns.recent_turns(db, limit=5)]
