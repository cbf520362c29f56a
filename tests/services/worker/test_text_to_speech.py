"""`text_to_speech`: offered only with TTS_BASE_URL; speaks through a fake OpenAI-shaped `/audio/speech` the test
starts on 127.0.0.1 into an OGG/Opus file of the workspace, which send_file then queues as a voice note; a
server answering with something else, an error or an endless body is refused with a clear message."""

from __future__ import annotations

import pytest
from pydantic import SecretStr
from sqlmodel import select

from services.worker.agent.drain import drain_session
from services.worker.tools import speech
from services.worker.tools.registry import ToolContext
from shared.errors import InvalidInput, Unavailable
from shared.models.attachments import Attachment
from shared.models.gateway import OutboxItem
from shared.stores import gateway_chats
from tests.fakes.model import text, tool_call
from tests.fakes.tts import OPUS, FakeTTS
from tests.services.worker.helpers import post_turn, wait_finished
from tests.support.factories import make_user

@pytest.fixture
def tts():
    server = FakeTTS()
    yield server
    server.close()


def offered(request) -> list[str]:
    return [t["function"]["name"] for t in request.body.get("tools") or []]


def test_not_offered_without_a_speech_server(db, user, session, model, make_runtime):
    model.script(text("ok"))
    turn = post_turn(db, user.id, session.id, "say hi")
    drain_session(make_runtime(tts_base_url=None), session.id)
    wait_finished(db, turn.id)
    assert "text_to_speech" not in offered(model.requests[-1])


def test_a_spoken_reply_is_saved_and_sent_to_the_chat_as_a_voice_note(db, model, make_runtime, tts):
    user = make_user(db)
    row, _, _ = gateway_chats.resolve(db, user.id, "agent:main:telegram:dm:5220")
    model.script(tool_call([("text_to_speech", {"text": "Good morning, Ann.", "path": "speech/hello.ogg"})]),
                 tool_call([("send_file", {"path": "speech/hello.ogg"})]),
                 text("Sent a voice note."))
    turn = post_turn(db, user.id, row.session_id, "say good morning out loud")

    runtime = make_runtime(tts_base_url=tts.url, tts_model="tts-test", tts_voice="nova",
                           tts_api_key=SecretStr("sk-tts-secret"))
    drain_session(runtime, row.session_id)

    assert wait_finished(db, turn.id).output == "Sent a voice note."
    [asked] = tts.requests
    assert asked["path"] == "/v1/audio/speech" and asked["auth"] == "Bearer sk-tts-secret"
    assert asked["body"] == {"model": "tts-test", "voice": "nova", "input": "Good morning, Ann.",
                             "response_format": "opus"}
    assert "text_to_speech" in offered(model.requests[-3])
    with db.read() as s:
        item = s.exec(select(OutboxItem).where(OutboxItem.user_id == user.id,
                                               OutboxItem.attachment_id.is_not(None))).one()
        attachment = s.get(Attachment, item.attachment_id)
    assert (attachment.kind, attachment.mime, attachment.path) == ("audio", "audio/ogg", "speech/hello.ogg")
    saved = runtime.settings.data_dir / "users" / user.id / "workspace" / "speech" / "hello.ogg"
    assert saved.read_bytes() == OPUS


@pytest.fixture
def ctx(settings, tmp_data_dir, tts):
    custom = settings.model_copy(update={"data_dir": tmp_data_dir, "tts_base_url": tts.url})
    return ToolContext(user_id="usr_tts", session_id="ses_tts", turn_id="turn_tts", settings=custom)


@pytest.mark.parametrize("reply, problem", [
    ((500, b"boom"), "HTTP 500"),
    ((200, b"<html>not audio</html>"), "did not answer with OGG/Opus"),
    ((200, b"OggS" + b"\x00" * (speech.MAX_AUDIO_BYTES + 10)), "larger than"),
])
def test_a_bad_answer_is_refused_clearly_and_nothing_is_written(ctx, tts, reply, problem):
    tts.reply = reply
    with pytest.raises(Unavailable, match=problem):
        speech.text_to_speech(ctx, {"text": "hello", "path": "speech/x.ogg"})
    assert not (ctx.workspace / "speech" / "x.ogg").exists()


@pytest.mark.parametrize("args, problem", [
    ({"text": "   "}, "empty"),
    ({"text": "a" * (speech.MAX_INPUT_CHARS + 1)}, "at most"),
    ({"text": "hi", "path": "../../outside.ogg"}, ""),
])
def test_bad_arguments_are_refused_before_the_server_is_asked(ctx, tts, args, problem):
    with pytest.raises(InvalidInput, match=problem or None):
        speech.text_to_speech(ctx, args)
    assert tts.requests == []
