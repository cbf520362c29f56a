"""`send_file`: the agent sends a workspace file to the Telegram chat its session talks to — an outbound
attachment and an outbox item recorded together, offered only where a chat continues the session, refusing
paths outside the workspace, links and empty files, and never queuing the same file twice in one turn."""

from __future__ import annotations

import json
import os

import pytest
from sqlmodel import select

from services.worker.agent.drain import drain_session
from services.worker.tools import send_file
from services.worker.tools.registry import ToolContext
from shared.errors import InvalidInput
from shared.models.attachments import Attachment
from shared.models.gateway import OutboxItem
from shared.stores import gateway_chats, sent_files
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import post_turn, wait_finished
from tests.support.factories import make_user

CHAT = "5219"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 64


def telegram_session(db, user_id: str) -> str:
    row, _, _ = gateway_chats.resolve(db, user_id, f"agent:main:telegram:dm:{CHAT}")
    return row.session_id


def offered(request) -> list[str]:
    return [t["function"]["name"] for t in request.body.get("tools") or []]


def items_of(db, user_id: str) -> list[OutboxItem]:
    with db.read() as s:
        return list(s.exec(select(OutboxItem).where(OutboxItem.user_id == user_id)))


def tool_results(request) -> list[dict]:
    return [json.loads(m["content"]) if m["content"].startswith("{") else m["content"]
            for m in request.body["messages"] if m.get("role") == "tool"]


def test_the_agent_sends_a_generated_report_to_its_telegram_chat(db, model, make_runtime):
    user = make_user(db)
    session_id = telegram_session(db, user.id)
    model.script(tool_call([("write_file", {"path": "out/report.csv", "content": "city,rain\nOslo,7\n"})]),
                 tool_call([("send_file", {"path": "out/report.csv", "caption": "This week's rain"})]),
                 text("Sent you the report."))
    turn = post_turn(db, user.id, session_id, "make me the rain report as a file")

    drain_session(make_runtime(), session_id)

    assert wait_finished(db, turn.id).output == "Sent you the report."
    assert "send_file" in offered(model.requests[-3])
    result = tool_results(model.requests[-1])[-1]
    assert result["file"] == "out/report.csv" and result["as"] == "document" and result["bytes"] == 17
    [item] = [i for i in items_of(db, user.id) if i.attachment_id]
    assert (item.target, item.chat_id, item.turn_id, item.text) == (f"telegram:{CHAT}", CHAT, turn.id,
                                                                     "This week's rain")
    with db.read() as s:
        attachment = s.get(Attachment, item.attachment_id)
    assert (attachment.kind, attachment.mime, attachment.path, attachment.session_id) == (
        "document", "text/plain", "out/report.csv", session_id)


def test_send_file_is_not_offered_to_a_session_no_chat_continues(db, user, session, model, make_runtime):
    model.script(text("ok"))
    turn = post_turn(db, user.id, session.id, "hi")

    drain_session(make_runtime(), session.id)

    wait_finished(db, turn.id)
    assert "send_file" not in offered(model.requests[-1])
    assert "write_file" in offered(model.requests[-1])


@pytest.fixture
def chat_ctx(db, settings, tmp_data_dir):
    user = make_user(db)
    custom = settings.model_copy(update={"data_dir": tmp_data_dir})
    return ToolContext(user_id=user.id, session_id=telegram_session(db, user.id), turn_id="turn_send_x",
                       settings=custom)


def test_an_image_goes_as_a_photo_and_the_same_file_twice_in_a_turn_is_queued_once(db, chat_ctx):
    (chat_ctx.workspace / "chart.png").write_bytes(PNG)

    first = send_file.send_file(chat_ctx, {"path": "chart.png"})
    again = send_file.send_file(chat_ctx, {"path": "./chart.png"})

    assert first["as"] == "photo" and first["status"] == "queued for delivery"
    assert again["status"].startswith("already queued") and again["attachment_id"] == first["attachment_id"]
    assert len([i for i in items_of(db, chat_ctx.user_id) if i.attachment_id]) == 1


@pytest.mark.parametrize("path", ["../../../etc/passwd", "/etc/passwd", "nul\x00name.txt", "x" * 1000, "missing.txt"])
def test_paths_outside_the_workspace_or_odd_names_are_refused_and_nothing_is_queued(db, chat_ctx, path):
    with pytest.raises(Exception) as refused:
        send_file.send_file(chat_ctx, {"path": path})
    assert getattr(refused.value, "status_code", 400) in (400, 403, 404, 422)
    assert not items_of(db, chat_ctx.user_id)


def test_a_link_to_a_file_outside_the_workspace_and_an_empty_file_are_refused(db, chat_ctx, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("the other user's secret")
    os.symlink(secret, chat_ctx.workspace / "innocent.txt")
    (chat_ctx.workspace / "empty.txt").write_bytes(b"")

    with pytest.raises(Exception):
        send_file.send_file(chat_ctx, {"path": "innocent.txt"})
    with pytest.raises(InvalidInput, match="empty"):
        send_file.send_file(chat_ctx, {"path": "empty.txt"})
    assert not items_of(db, chat_ctx.user_id)


def test_with_no_chat_the_tool_says_so_clearly(db, settings, tmp_data_dir, session, user):
    ctx = ToolContext(user_id=user.id, session_id=session.id, turn_id="turn_y",
                      settings=settings.model_copy(update={"data_dir": tmp_data_dir}))
    (ctx.workspace / "a.txt").write_text("a")
    with pytest.raises(InvalidInput, match="no chat to send to"):
        send_file.send_file(ctx, {"path": "a.txt"})


def test_files_sent_in_a_session_are_listed_with_their_delivery(db, chat_ctx):
    (chat_ctx.workspace / "notes.txt").write_text("hello")
    send_file.send_file(chat_ctx, {"path": "notes.txt"})
    [(attachment, item)] = sent_files.sent_in_session(db, chat_ctx.user_id, chat_ctx.session_id)
    assert attachment.filename == "notes.txt" and item.status == "pending"
    assert sent_files.sent_in_session(db, make_user(db).id, chat_ctx.session_id) == []


def test_the_first_call_of_a_telegram_chat_stays_within_15_kb_with_send_file_offered(db, model, make_runtime):
    """send_file is the one tool a chat adds; its first call keeps the budget the web-turn test keeps."""
    user = make_user(db)
    session_id = telegram_session(db, user.id)
    model.script(text("Hello."))
    turn = post_turn(db, user.id, session_id, "Hello!")

    drain_session(make_runtime(searxng_url="http://127.0.0.1:9/"), session_id)

    wait_finished(db, turn.id)
    first = model.requests[-1]
    size = int(first.headers.get("content-length") or 0)
    print(f"\nfirst call of a Telegram chat: {size:,} bytes, {len(offered(first))} tools")
    assert "send_file" in offered(first) and "web_search" in offered(first)
    assert size <= 15 * 1024
