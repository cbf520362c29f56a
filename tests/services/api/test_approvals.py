"""The approvals routes: list the caller's own, decide once (409 after), 404 for another user's, resume the turn."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from shared.stores import approvals, turns
from shared.stores.approvals import Verdict
from shared.queue.names import RESUME_TURN
from tests.services.api.helpers import error_of
from tests.support.factories import make_session, make_user
from tests.support.waiting import wait_until

WORKER = "worker@test:approvals"


def park_one(db, user, command: str = "rm -r build-tmp", timeout: float = 300):
    """A turn parked on one command, as a worker leaves it."""
    session = make_session(db, user.id)
    turn, _ = turns.create_turn(db, user.id, session.id, "clean up")
    turns.claim_next(db, session.id, WORKER, 30)
    verdict = Verdict(user_id=user.id, session_id=session.id, turn_id=turn.id, tool_call_id="c1", command=command,
                      reason="recursive delete", rule="dangerous", key="recursive delete")
    return approvals.park(db, verdict, WORKER, timeout)


def test_pending_lists_only_the_callers_open_questions_and_all_lists_every_decision(client, db):
    alice, bob = make_user(db), make_user(db)
    first, second = park_one(db, alice), park_one(db, alice, "git reset --hard")
    park_one(db, bob)
    approvals.record(db, Verdict(user_id=alice.id, session_id=first.session_id, turn_id=first.turn_id,
                                 tool_call_id="c0", command="rm -rf /", reason="never allowed", rule="hardline"),
                     approved=False)

    pending = client.get("/v1/approvals", headers=alice.headers).json()["data"]
    everything = client.get("/v1/approvals?status=all", headers=alice.headers).json()["data"]

    assert [a["id"] for a in pending] == [first.id, second.id]
    assert pending[0]["command"] == "rm -r build-tmp" and pending[0]["status"] == "pending"
    assert {a["status"] for a in everything} == {"pending", "denied"} and len(everything) == 3
    assert client.get("/v1/approvals?status=maybe", headers=alice.headers).status_code == 422


def test_approving_resumes_the_turn_and_a_second_decision_is_409(client, db, enqueued):
    user = make_user(db)
    row = park_one(db, user)

    response = client.post(f"/v1/approvals/{row.id}", json={"decision": "approve", "scope": "session"},
                           headers=user.headers)

    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["scope"], body["decided_by"]) == ("approved", "session", user.id)
    assert enqueued.calls == [(RESUME_TURN, {"turn_id": row.turn_id, "session_id": row.session_id,
                                             "approval_id": row.id}, "queued")]
    again = client.post(f"/v1/approvals/{row.id}", json={"decision": "deny"}, headers=user.headers)
    assert again.status_code == 409 and error_of(again)["code"] == "approval_decided"
    assert len(enqueued.calls) == 1


def test_a_question_past_its_time_is_409_expired_and_its_turn_resumes_with_the_refusal(client, db, enqueued):
    user = make_user(db)
    row = park_one(db, user, timeout=0.001)
    with db.write() as s:  # the clock moved on
        from shared.models.approvals import Approval
        s.get(Approval, row.id).expires_at = row.created_at - timedelta(seconds=1)

    response = client.post(f"/v1/approvals/{row.id}", json={"decision": "approve"}, headers=user.headers)

    assert response.status_code == 409 and error_of(response)["code"] == "approval_expired"
    assert [name for name, _, _ in enqueued.calls] == [RESUME_TURN]
    assert turns.get_turn(db, None, row.turn_id).status == "queued"


def test_another_users_approval_is_404_and_untouched(client, db, enqueued):
    owner, stranger = make_user(db), make_user(db)
    row = park_one(db, owner)

    response = client.post(f"/v1/approvals/{row.id}", json={"decision": "approve"}, headers=stranger.headers)

    assert response.status_code == 404 and error_of(response)["code"] == "approval_not_found"
    assert approvals.list_approvals(db, owner.id, pending_only=True)[0].status == "pending"
    assert enqueued.calls == []


@pytest.mark.parametrize("body", [{}, {"decision": "maybe"}, {"decision": "approve", "scope": "forever"},
                                  {"decision": "approve", "extra": 1}, ["approve"]])
def test_a_bad_body_is_422(client, db, body):
    user = make_user(db)
    row = park_one(db, user)
    response = client.post(f"/v1/approvals/{row.id}", json=body, headers=user.headers)
    assert response.status_code == 422


def test_the_openai_route_accepts_turns_nobody_can_be_asked_about(client, db):
    user = make_user(db)
    with pytest.raises(httpx.TimeoutException):  # no worker here: the turn is only accepted
        client.post("/v1/chat/completions", headers=user.headers, timeout=1,
                    json={"model": "hermes", "messages": [{"role": "user", "content": "hi"}]})
    mine = wait_until(lambda: [t for t in turns.recent_turns(db, limit=50) if t.user_id == user.id],
                      what="the turn to be accepted")
    assert [t.interactive for t in mine] == [False]
