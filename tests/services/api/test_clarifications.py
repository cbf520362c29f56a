"""The clarifications routes: list the caller's open questions, answer once with a choice, 404 for another user's."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared.models.clarifications import Clarification
from shared.queue.names import RESUME_TURN
from shared.stores import clarifications, turns
from shared.stores.clarifications import Question
from tests.services.api.helpers import error_of
from tests.support.factories import make_session, make_user

WORKER = "worker@test:clarifications"


def park_one(db, user, question: str = "Which theme?"):
    """A turn parked on one clarify call, as a worker leaves it."""
    session = make_session(db, user.id)
    turn, _ = turns.create_turn(db, user.id, session.id, "theme it")
    turns.claim_next(db, session.id, WORKER, 30)
    ask = Question(user_id=user.id, session_id=session.id, turn_id=turn.id, tool_call_id="c1", question=question,
                   choices=("Light", "Dark"))
    return clarifications.park(db, ask, WORKER, 600)


def test_pending_lists_only_the_callers_open_questions(client, db):
    alice, bob = make_user(db), make_user(db)
    first, second = park_one(db, alice), park_one(db, alice, "Which font?")
    park_one(db, bob)

    pending = client.get("/v1/clarifications?status=pending", headers=alice.headers).json()["data"]

    assert [q["id"] for q in pending] == [first.id, second.id]
    assert (pending[0]["question"], pending[0]["choices"], pending[0]["status"]) == ("Which theme?", ["Light", "Dark"],
                                                                                   "pending")
    assert turns.get_turn(db, None, first.turn_id).status == "awaiting_input"


def test_answering_resumes_the_turn_and_a_second_answer_is_409(client, db, enqueued):
    user = make_user(db)
    row = park_one(db, user)

    response = client.post(f"/v1/clarifications/{row.id}", json={"choice": "Dark"}, headers=user.headers)

    assert response.status_code == 200
    assert (response.json()["status"], response.json()["choice"]) == ("answered", "Dark")
    assert enqueued.calls == [(RESUME_TURN, {"turn_id": row.turn_id, "session_id": row.session_id,
                                             "approval_id": row.id}, "queued")]
    again = client.post(f"/v1/clarifications/{row.id}", json={"choice": "Light"}, headers=user.headers)
    assert again.status_code == 409 and error_of(again)["code"] == "clarification_answered"
    assert len(enqueued.calls) == 1


def test_an_answer_past_its_time_is_409_expired_and_the_turn_goes_on(client, db, enqueued):
    user = make_user(db)
    row = park_one(db, user)
    with db.write() as s:  # the clock moved on
        s.get(Clarification, row.id).expires_at = row.created_at - timedelta(seconds=1)

    response = client.post(f"/v1/clarifications/{row.id}", json={"choice": "Dark"}, headers=user.headers)

    assert response.status_code == 409 and error_of(response)["code"] == "clarification_expired"
    assert [name for name, _, _ in enqueued.calls] == [RESUME_TURN]
    assert turns.get_turn(db, None, row.turn_id).status == "queued"


def test_another_users_question_is_404_and_untouched(client, db, enqueued):
    owner, stranger = make_user(db), make_user(db)
    row = park_one(db, owner)

    response = client.post(f"/v1/clarifications/{row.id}", json={"choice": "Dark"}, headers=stranger.headers)

    assert response.status_code == 404 and error_of(response)["code"] == "clarification_not_found"
    assert clarifications.list_pending(db, owner.id)[0].status == "pending"
    assert enqueued.calls == []


@pytest.mark.parametrize("body", [{}, {"choice": ""}, {"choice": "Purple"}, {"choice": "Dark", "extra": 1}])
def test_a_bad_answer_is_422_and_the_question_stays_open(client, db, enqueued, body):
    user = make_user(db)
    row = park_one(db, user)
    response = client.post(f"/v1/clarifications/{row.id}", json=body, headers=user.headers)
    assert response.status_code == 422
    assert clarifications.list_pending(db, user.id)[0].id == row.id and enqueued.calls == []


def test_cancelling_a_turn_waiting_for_an_answer_ends_it_and_settles_the_question(client, db):
    user = make_user(db)
    row = park_one(db, user)

    response = client.post(f"/v1/turns/{row.turn_id}/cancel", headers=user.headers)

    assert response.status_code in (200, 202)
    assert turns.get_turn(db, None, row.turn_id).status == "cancelled"
    assert clarifications.list_pending(db, user.id) == []
