"""Sessions: create, list in cursor pages, read, and read the transcript; other users see nothing."""

from __future__ import annotations

from shared.stores import sessions
from tests.services.api.helpers import error_of
from tests.support.factories import make_session, make_user


def test_create_and_read_a_session(client, user):
    created = client.post("/v1/sessions", headers=user.headers, json={"title": "plans", "instructions": "Be brief."})
    assert created.status_code == 201
    body = created.json()
    assert body["title"] == "plans" and body["source"] == "api" and body["turn_count"] == 0
    assert "system_prompt_sha256" in body

    read = client.get(f"/v1/sessions/{body['id']}", headers=user.headers)
    assert read.status_code == 200 and read.json() == body


def test_an_empty_body_creates_an_untitled_session(client, user):
    created = client.post("/v1/sessions", headers=user.headers, json={})
    assert created.status_code == 201 and created.json()["title"] is None


def test_sessions_list_newest_first_in_cursor_pages(client, db):
    owner = make_user(db)
    ids = [make_session(db, owner.id, title=f"s{i}").id for i in range(5)]

    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/sessions", headers=owner.headers, params=params).json()
        assert len(page["data"]) <= 2
        seen += [s["id"] for s in page["data"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ids[::-1]  # newest first by creation, no repeats, none missing


def test_page_size_is_bounded(client, user):
    for limit in (0, 101):
        response = client.get("/v1/sessions", headers=user.headers, params={"limit": limit})
        assert response.status_code == 422
        assert error_of(response)["message"].startswith("limit:")


def test_the_transcript_reads_in_order_in_pages(client, db, user):
    session = make_session(db, user.id)
    sessions.append_messages(db, session.id, [{"role": "user", "content": f"m{i}"} for i in range(5)])

    contents, after = [], None
    while True:
        params = {"limit": 2, **({"after": after} if after is not None else {})}
        page = client.get(f"/v1/sessions/{session.id}/messages", headers=user.headers, params=params).json()
        contents += [m["content"] for m in page["data"]]
        after = page["next_after"]
        if after is None:
            break
    assert contents == [f"m{i}" for i in range(5)]


def test_another_users_session_and_transcript_are_not_found(client, db, user):
    theirs = make_session(db, make_user(db).id)
    for path in (f"/v1/sessions/{theirs.id}", f"/v1/sessions/{theirs.id}/messages"):
        response = client.get(path, headers=user.headers)
        assert response.status_code == 404
        assert error_of(response)["code"] == "session_not_found"
    assert theirs.id not in [s["id"] for s in client.get("/v1/sessions", headers=user.headers).json()["data"]]


def test_unknown_sessions_are_not_found(client, user):
    assert client.get("/v1/sessions/ses_missing", headers=user.headers).status_code == 404
    assert client.get("/v1/sessions/ses_missing/messages", headers=user.headers).status_code == 404


def test_unknown_fields_are_refused(client, user):
    response = client.post("/v1/sessions", headers=user.headers, json={"title": "x", "model": "gpt"})
    assert response.status_code == 422
    error = error_of(response)
    assert error["code"] == "invalid_request" and "model" in error["message"]


def test_ending_a_session_sends_end_session_for_the_curator(client, user, api_app):
    from shared.queue.names import END_SESSION
    sent: list[tuple[str, dict]] = []
    api_app.state.enqueue = lambda name, payload: sent.append((name, payload.model_dump()))
    created = client.post("/v1/sessions", headers=user.headers, json={}).json()
    response = client.post(f"/v1/sessions/{created['id']}/end", headers=user.headers)
    assert response.status_code == 202
    assert sent == [(END_SESSION, {"session_id": created["id"]})]
    assert client.post("/v1/sessions/s-missing/end", headers=user.headers).status_code == 404


def test_patch_retitles_a_session_of_yours_only(client, db, user):
    from tests.support.factories import make_session, make_user
    session = make_session(db, user.id)
    response = client.patch(f"/v1/sessions/{session.id}", headers=user.headers, json={"title": "Lisbon trip"})
    assert response.status_code == 200 and response.json()["title"] == "Lisbon trip"
    other = make_user(db)
    assert client.patch(f"/v1/sessions/{session.id}", headers=other.headers, json={"title": "x"}).status_code == 404
    assert client.patch(f"/v1/sessions/{session.id}", headers=user.headers, json={"bogus": 1}).status_code == 422
