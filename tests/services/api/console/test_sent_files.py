"""The console offers the files the agent sent from a chat (send_file) as downloads, to their owner only."""

from __future__ import annotations

import hashlib

from shared.media.inbox import workspace_of
from shared.stores import gateway_chats, sent_files
from tests.support.factories import make_user


def agent_sent(db, settings, user_id: str, name: str, data: bytes, *, mime: str = "text/html") -> tuple[str, str]:
    """(session id, attachment id) of a file the agent sent into the user's Telegram chat."""
    row, _, _ = gateway_chats.resolve(db, user_id, "agent:main:telegram:dm:5218")
    folder = workspace_of(settings, user_id) / "out"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    sent = sent_files.send(db, user_id=user_id, session_id=row.session_id, turn_id=f"turn_{name}",
                           target="telegram:5218", chat_id="5218", caption="<b>the report</b>", kind="document",
                           filename=name, mime=mime, size=len(data), path=f"out/{name}",
                           sha256=hashlib.sha256(data).hexdigest())
    return row.session_id, sent.attachment.id


def test_a_file_the_agent_sent_is_listed_and_downloads_as_an_attachment(signed_in, db, user, settings):
    data = b"<script>alert(1)</script>"
    session_id, attachment_id = agent_sent(db, settings, user.id, "page.html", data)

    assert f"/chat/{session_id}/sent" in signed_in.get(f"/chat/{session_id}").text
    listing = signed_in.get(f"/chat/{session_id}/sent").text
    assert f"/chat/attachments/{attachment_id}" in listing and "page.html" in listing
    assert "<b>the report</b>" not in listing and "&lt;b&gt;the report&lt;/b&gt;" in listing
    got = signed_in.get(f"/chat/attachments/{attachment_id}")
    assert got.status_code == 200 and got.content == data
    assert got.headers["content-disposition"].startswith("attachment")
    assert got.headers["x-content-type-options"] == "nosniff"


def test_another_users_sent_files_are_404_by_chat_or_by_id(signed_in, db, settings, user):
    theirs, attachment_id = agent_sent(db, settings, make_user(db).id, "secret.txt", b"theirs", mime="text/plain")
    mine, _ = agent_sent(db, settings, user.id, "mine.txt", b"mine", mime="text/plain")
    assert signed_in.get(f"/chat/{theirs}/sent").status_code == 404
    assert signed_in.get(f"/chat/attachments/{attachment_id}").status_code == 404
    assert attachment_id not in signed_in.get(f"/chat/{mine}/sent").text
