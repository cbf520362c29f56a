"""GET /v1/reviews: what the caller's background reviews decided and wrote; another user's never appear."""

from __future__ import annotations

from shared.models.reviews import CallOutcome
from tests.services.api.helpers import error_of
from tests.support.factories import make_session, make_user
from tests.support.reviews import completed_review, due_review

REMEMBER = {"action": "add", "target": "user", "content": "User wants answers in British English."}
SAVED = {"success": True, "done": True, "target": "user", "message": "Entry added."}


def test_a_review_shows_its_trigger_cost_and_each_write_with_its_result(client, db, user):
    chat = make_session(db, user.id)
    review = completed_review(db, user.id, chat.id, [
        ("skills_list", {}, CallOutcome.done, {"skills": [], "count": 0}),
        ("memory", REMEMBER, CallOutcome.applied, SAVED),
    ])

    response = client.get("/v1/reviews", headers=user.headers, params={"session_id": chat.id})

    assert response.status_code == 200
    [shown] = response.json()["data"]
    assert {k: shown[k] for k in ("id", "session_id", "turn_id", "trigger", "status", "summary", "model_calls",
                                  "prompt_tokens", "completion_tokens", "attempts", "error")} == {
        "id": review.id, "session_id": chat.id, "turn_id": review.turn_id, "trigger": "memory",
        "status": "completed", "summary": "Saved.", "model_calls": 2, "prompt_tokens": 1900,
        "completion_tokens": 50, "attempts": 1, "error": None}
    [write] = shown["writes"]  # reads stay in the ledger; the record lists writes
    assert {k: write[k] for k in ("index", "tool", "arguments", "outcome", "result")} == {
        "index": 1, "tool": "memory", "arguments": REMEMBER, "outcome": "applied", "result": SAVED}
    assert shown["created_at"] and shown["started_at"] and shown["finished_at"] and write["finished_at"]


def test_only_the_callers_own_reviews_are_listed(client, db, user):
    mine = make_session(db, user.id)
    waiting = due_review(db, user.id, mine.id)
    other = make_user(db)
    theirs = make_session(db, other.id)
    due_review(db, other.id, theirs.id)

    listed = client.get("/v1/reviews", headers=user.headers).json()["data"]
    assert [(r["id"], r["status"], r["writes"]) for r in listed] == [(waiting.id, "queued", [])]
    refused = client.get("/v1/reviews", headers=user.headers, params={"session_id": theirs.id})
    assert refused.status_code == 404 and error_of(refused)["code"] == "session_not_found"


def test_bad_requests_are_refused(client, user):
    assert client.get("/v1/reviews").status_code == 401
    too_many = client.get("/v1/reviews", headers=user.headers, params={"limit": 1000})
    assert too_many.status_code == 422 and error_of(too_many)["code"] == "invalid_request"
