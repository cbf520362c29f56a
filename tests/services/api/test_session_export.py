"""GET /v1/sessions/{id}/export?format=json|md|html: the whole transcript as a download, only for its owner."""

from __future__ import annotations

import json

from shared.stores import sessions
from tests.services.api.helpers import error_of
from tests.support.factories import make_session, make_user


def transcript(db, user_id: str):
    session = make_session(db, user_id, title="Trip <plans>")
    sessions.append_messages(db, session.id, [
        {"role": "user", "content": "Book the <b>train</b> & a hotel"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "terminal", "arguments": "{\"command\": \"ls\"}"}}]},
        {"role": "tool", "content": "tickets.txt", "tool_call_id": "c1", "name": "terminal"},
        {"role": "assistant", "content": "Booked: 08:10 to Lyon."}])
    return session


def test_json_holds_the_session_and_every_message_in_order(client, db, user):
    """Reproduction: there was no export route (404); a transcript could only be paged through /messages."""
    session = transcript(db, user.id)
    response = client.get(f"/v1/sessions/{session.id}/export", headers=user.headers, params={"format": "json"})

    assert response.status_code == 200
    assert response.headers["content-disposition"] == f'attachment; filename="{session.id}.json"'
    body = json.loads(response.text)
    assert body["session"]["id"] == session.id and body["session"]["title"] == "Trip <plans>"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert body["messages"][1]["tool_calls"][0]["function"]["name"] == "terminal"


def test_markdown_and_html_read_as_the_conversation(client, db, user):
    session = transcript(db, user.id)
    md = client.get(f"/v1/sessions/{session.id}/export", headers=user.headers, params={"format": "md"})
    page = client.get(f"/v1/sessions/{session.id}/export", headers=user.headers, params={"format": "html"})

    assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
    assert md.text.startswith("# Trip <plans>") and "Booked: 08:10 to Lyon." in md.text
    assert 'tool call: `terminal({"command": "ls"})`' in md.text
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<b>train</b>" not in page.text and "&lt;b&gt;train&lt;/b&gt; &amp; a hotel" in page.text
    assert page.text.index("Book the") < page.text.index("Booked: 08:10")


def test_another_users_export_is_not_found_and_formats_are_checked(client, db, user):
    theirs = transcript(db, make_user(db).id)
    response = client.get(f"/v1/sessions/{theirs.id}/export", headers=user.headers)
    assert response.status_code == 404 and error_of(response)["code"] == "session_not_found"
    mine = make_session(db, user.id)
    pdf = client.get(f"/v1/sessions/{mine.id}/export", headers=user.headers, params={"format": "pdf"})
    assert pdf.status_code == 422
