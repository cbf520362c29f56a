"""The chat page's download links and delete button: the same export and deletion as the API, owner only."""

from __future__ import annotations

from shared.stores import sessions
from tests.services.api.console.conftest import csrf_of
from tests.support.factories import make_session, make_user


def test_a_chat_downloads_as_markdown_and_is_deleted_after_confirmation(signed_in, db, user):
    """Reproduction: the chat page offered neither a download nor a way to delete the conversation."""
    chat = make_session(db, user.id, title="packing list")
    sessions.append_messages(db, chat.id, [{"role": "user", "content": "pack the <tent>"}])
    page = signed_in.get(f"/chat/{chat.id}").text
    assert f"/chat/{chat.id}/download?format=md" in page and f'action="/chat/{chat.id}/delete"' in page

    download = signed_in.get(f"/chat/{chat.id}/download", params={"format": "md"})
    assert download.status_code == 200 and "attachment" in download.headers["content-disposition"]
    assert download.text.startswith("# packing list") and "pack the <tent>" in download.text

    token = csrf_of(page)
    unconfirmed = signed_in.http.post(f"/chat/{chat.id}/delete", data={"csrf_token": token})
    assert unconfirmed.status_code == 303 and sessions.get_session(db, user.id, chat.id)
    done = signed_in.http.post(f"/chat/{chat.id}/delete", data={"csrf_token": token, "confirm": "yes"})
    assert done.status_code == 303 and done.headers["location"] == "/chat"
    assert "Memory entries and skills" in signed_in.get("/chat").text
    assert signed_in.get(f"/chat/{chat.id}").status_code == 404


def test_another_users_chat_cannot_be_downloaded_or_deleted(signed_in, db):
    theirs = make_session(db, make_user(db).id)
    assert signed_in.get(f"/chat/{theirs.id}/download").status_code == 404
    token = csrf_of(signed_in.get("/chat").text)
    response = signed_in.http.post(f"/chat/{theirs.id}/delete", data={"csrf_token": token, "confirm": "yes"})
    assert response.status_code == 404
    assert sessions.get_session(db, None, theirs.id)
