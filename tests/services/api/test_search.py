"""GET /v1/search: the caller's messages, ranked; another user's never appear."""

from __future__ import annotations

from shared.stores import sessions
from tests.shared.test_search_time import store_dated
from tests.services.api.helpers import error_of
from tests.support.factories import make_session, make_user


def store(db, user_id, *lines, role="user"):
    session = make_session(db, user_id)
    sessions.append_messages(db, session.id, [{"role": role, "content": line} for line in lines])
    return session


def test_search_returns_the_callers_messages_best_first(client, db, user):
    store(db, user.id, "We fixed the Postgres lock timeout on Tuesday.", "Lunch was a salad.")
    store(db, user.id, "The Postgres upgrade is planned.", role="assistant")

    response = client.get("/v1/search", headers=user.headers, params={"q": "How did we fix the Postgres lock?"})

    assert response.status_code == 200
    body = response.json()
    assert body["query"] == "How did we fix the Postgres lock?"
    assert [h["content"] for h in body["data"]] == ["We fixed the Postgres lock timeout on Tuesday.",
                                                   "The Postgres upgrade is planned."]
    first = body["data"][0]
    assert set(first) == {"message_id", "session_id", "role", "content", "created_at", "score", "coverage"}
    assert first["coverage"] == 1.0 and first["score"] > body["data"][1]["score"]


def test_another_users_messages_never_appear(client, db, user):
    other = make_user(db)
    theirs = store(db, other.id, "my bank PIN hint is the walrus")
    store(db, user.id, "a walrus at the zoo")

    found = client.get("/v1/search", headers=user.headers, params={"q": "walrus PIN"}).json()["data"]
    assert [h["content"] for h in found] == ["a walrus at the zoo"]
    refused = client.get("/v1/search", headers=user.headers, params={"q": "walrus", "session_id": theirs.id})
    assert refused.status_code == 404 and error_of(refused)["code"] == "session_not_found"


def test_filters_limit_and_odd_queries(client, db, user):
    first = store(db, user.id, "kayak one", "kayak two", "kayak three")
    store(db, user.id, "kayak four")
    params = {"q": "kayak", "session_id": first.id, "limit": 2, "sort": "oldest"}

    found = client.get("/v1/search", headers=user.headers, params=params).json()["data"]
    assert len(found) == 2 and {h["session_id"] for h in found} == {first.id}
    assert [h["message_id"] for h in found] == sorted(h["message_id"] for h in found)
    for odd in ['"unbalanced', "NEAR(", "-x:y*", "🙂", "AND"]:
        response = client.get("/v1/search", headers=user.headers, params={"q": odd})
        assert response.status_code == 200 and isinstance(response.json()["data"], list)


def test_bad_requests_are_refused_with_a_stable_code(client, user):
    assert client.get("/v1/search", params={"q": "x"}).status_code == 401
    missing = client.get("/v1/search", headers=user.headers)
    assert missing.status_code == 422 and error_of(missing)["code"] == "invalid_request"
    too_many = client.get("/v1/search", headers=user.headers, params={"q": "x", "limit": 1000})
    assert too_many.status_code == 422


def test_time_order_over_the_api_applies_the_limit_after_ordering(client, db, user):
    stored = store_dated(db, user.id, ["kayak " * 8] + [f"kayak remark {i} with plenty of padding words" for i in range(12)])
    body = client.get("/v1/search", headers=user.headers, params={"q": "kayak", "limit": 2, "sort": "oldest"}).json()
    assert [h["message_id"] for h in body["data"]] == [stored[0].id, stored[1].id]
    body = client.get("/v1/search", headers=user.headers, params={"q": "kayak", "limit": 2, "sort": "newest"}).json()
    assert [h["message_id"] for h in body["data"]] == [stored[-1].id, stored[-2].id]
