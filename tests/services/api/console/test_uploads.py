"""The chat page's upload form: a file and a message become a turn carrying the file; images are shown inline
from an owner-only URL under the console's CSP, other files are download links; the form's CSRF token is
checked before the file is written."""

from __future__ import annotations


import pytest
from sqlalchemy import update

from shared.models.turns import Turn

from shared.media.inbox import workspace_of
from shared.stores import attachments, sessions
from tests.services.api.console.conftest import Browser, csrf_of
from tests.support.factories import make_session, make_user
from tests.support.media import PNG


def as_claimed(db, session_id: str, turn_id: str, text: str) -> None:
    """What the worker does with the turn: its user message stored and referring to its files; then finished."""
    message = sessions.append_messages(db, session_id, [{"role": "user", "content": text, "turn_id": turn_id,
                                                         "turn_position": 0}])[0]
    attachments.link_message(db, turn_id, message.id)
    with db.write() as s:
        s.execute(update(Turn).where(Turn.id == turn_id).values(status="completed", output="ok"))


def send_file(browser: Browser, session_id: str, data: bytes, name: str, message: str = "", token: str | None = None):
    page = browser.get(f"/chat/{session_id}").text
    form = {"csrf_token": csrf_of(page) if token is None else token, "message": message}
    return browser.http.post(f"/chat/{session_id}/upload", data=form, files={"file": (name, data)})


@pytest.fixture
def chat(db, user):
    return make_session(db, user.id)


def test_a_photo_sent_from_the_chat_page_becomes_a_turn_and_shows_inline(signed_in, db, settings, user, chat,
                                                                         enqueued):
    answer = send_file(signed_in, chat.id, PNG, "cat & dog's.png", "what is this?")
    assert answer.status_code == 303 and answer.headers["location"] == f"/chat/{chat.id}#live"
    assert len(enqueued.calls) == 1
    turn_id = enqueued.calls[0][1]["turn_id"]
    [row] = attachments.for_turn(db, turn_id)
    assert (workspace_of(settings, user.id) / row.path).read_bytes() == PNG
    as_claimed(db, chat.id, turn_id, "what is this?")
    page = signed_in.get(f"/chat/{chat.id}")
    assert f'<img class="attachment" src="/chat/attachments/{row.id}" alt="cat &amp; dog&#39;s.png">' in page.text
    assert "cat & dog" not in page.text and row.filename == "cat & dog's.png"
    assert "img-src 'self' data:" in page.headers["content-security-policy"]
    served = signed_in.get(f"/chat/attachments/{row.id}")
    assert served.status_code == 200 and served.content == PNG
    assert served.headers["x-content-type-options"] == "nosniff" and "script-src 'self'" in served.headers[
        "content-security-policy"]


def test_a_document_is_a_download_link(signed_in, db, user, chat, enqueued):
    send_file(signed_in, chat.id, b"meeting notes\n", "notes.txt")
    turn_id = enqueued.calls[0][1]["turn_id"]
    [row] = attachments.for_turn(db, turn_id)
    as_claimed(db, chat.id, turn_id, "")
    page = signed_in.get(f"/chat/{chat.id}").text
    assert f'<a href="/chat/attachments/{row.id}" download>notes.txt</a>' in page
    served = signed_in.get(f"/chat/attachments/{row.id}")
    assert served.headers["content-disposition"].startswith("attachment")


def test_another_users_file_and_chat_are_404(signed_in, db, settings, browser, api, chat, enqueued):
    send_file(signed_in, chat.id, PNG, "mine.png")
    [row] = attachments.for_turn(db, enqueued.calls[0][1]["turn_id"])
    import httpx

    with httpx.Client(base_url=api, timeout=20, follow_redirects=False) as http:
        other = Browser(http)
        other.sign_in(make_user(db).key)
        assert other.get(f"/chat/attachments/{row.id}").status_code == 404
        token = csrf_of(other.get("/chat").text)
        refused = other.http.post(f"/chat/{chat.id}/upload", data={"csrf_token": token}, files={"file": ("x.png", PNG)})
        assert refused.status_code == 404


def test_a_forged_form_writes_nothing(signed_in, settings, user, chat, enqueued):
    before = {p for p in workspace_of(settings, user.id).rglob("*") if p.is_file()}
    answer = send_file(signed_in, chat.id, PNG, "x.png", token="forged")
    assert answer.status_code == 403 and enqueued.calls == []
    assert {p for p in workspace_of(settings, user.id).rglob("*") if p.is_file()} == before


def test_a_program_disguised_as_a_photo_is_refused_with_a_message(signed_in, settings, user, chat, enqueued):
    answer = send_file(signed_in, chat.id, b"\x7fELF" + b"\x00" * 100, "cat.png")
    assert answer.status_code == 303 and enqueued.calls == []
    page = signed_in.get(f"/chat/{chat.id}").text
    assert "ELF executable" in page
