"""A turn's files reach the agent: images as image parts when the model sees (the scripted model's log shows
them), otherwise a line saying where the image is and what can look at it; voice notes transcribed by a fake
`/audio/transcriptions` this test starts (the transcript is the turn's text, stored, and searchable); no STT
configured -> one line on how to enable it; a PDF saved and read with read_file. Never silently dropped."""

from __future__ import annotations

import base64
import json

import pytest

from services.worker.agent.drain import drain_session
from shared.media import refs
from shared.search.engine import search_messages
from shared.stores import attachments, sessions, turns
from tests.fakes.model import text, tool_call
from tests.fakes.speech import FakeSpeech
from tests.services.worker.helpers import wait_finished
from tests.support.factories import make_session
from tests.support.media import OGG_OPUS, PNG, attach, pdf_with_text


def run(db, runtime, user_id, session_id, words, files):
    turn, _, _ = turns.accept_turn(db, user_id, session_id, words, attachment_ids=[f.id for f in files])
    drain_session(runtime, session_id)
    return wait_finished(db, turn.id, timeout=60)


def user_message(request) -> dict:
    return [m for m in request.body["messages"] if m["role"] == "user"][-1]


def image_parts(request) -> list[dict]:
    content = user_message(request)["content"]
    return [p for p in content if p.get("type") == "image_url"] if isinstance(content, list) else []


@pytest.fixture
def speech():
    fake = FakeSpeech().start()
    yield fake
    fake.stop()


def test_a_photo_reaches_a_seeing_model_as_an_image_part(settings, db, user, model, make_runtime):
    session = make_session(db, user.id)
    photo = attach(settings, db, user.id, session.id, PNG, "cat.png")
    model.script(text("A cat."), text("Still a cat."))
    runtime = make_runtime(llm_vision=True)
    assert run(db, runtime, user.id, session.id, "what is this?", [photo]).output == "A cat."
    parts = image_parts(model.requests[0])
    assert [p["image_url"]["url"] for p in parts] == ["data:image/png;base64," + base64.b64encode(PNG).decode()]
    said = parts and user_message(model.requests[0])["content"][0]["text"]
    assert said.startswith("what is this?") and f"{photo.path}" in said and "shown to you" in said
    linked = attachments.get_attachment(db, user.id, photo.id).message_id
    assert linked == [m for m in sessions.list_messages(db, session.id) if m.role == "user"][0].id
    # the next turn sends the image no more: its text still says where the file is
    assert run(db, runtime, user.id, session.id, "and now?", []).output == "Still a cat."
    assert image_parts(model.requests[1]) == [] and photo.path in json.dumps(model.requests[1].body)


def test_a_blind_model_is_told_where_the_image_is(settings, db, user, model, make_runtime):
    session = make_session(db, user.id)
    photo = attach(settings, db, user.id, session.id, PNG, "cat.png")
    model.script(text("ok"))
    run(db, make_runtime(llm_vision=False, vision_model=None), user.id, session.id, "", [photo])
    said = user_message(model.requests[0])["content"]
    assert isinstance(said, str) and photo.path in said and "no vision model is configured" in said


def test_a_voice_note_is_transcribed_marked_as_spoken_and_searchable(settings, db, user, model, make_runtime,
                                                                     speech):
    session = make_session(db, user.id)
    note = attach(settings, db, user.id, session.id, OGG_OPUS, "voice.ogg")
    model.script(text("Noted: oat milk."))
    runtime = make_runtime(stt_base_url=speech.base_url, stt_model="whisper-test")
    assert run(db, runtime, user.id, session.id, "", [note]).output == "Noted: oat milk."
    sent = speech.received[0]
    assert sent["path"] == "/v1/audio/transcriptions" and b"whisper-test" in sent["body"] and OGG_OPUS in sent["body"]
    said = user_message(model.requests[0])["content"]
    assert said.startswith(f"{refs.SPOKEN_MARKER} buy oat milk tomorrow") and note.path in said
    assert attachments.get_attachment(db, user.id, note.id).transcript == "buy oat milk tomorrow"
    stored = [m for m in sessions.list_messages(db, session.id) if m.role == "user"][0]
    assert "buy oat milk tomorrow" in stored.content
    assert [hit.message_id for hit in search_messages(db, user.id, "oat milk", role="user")] == [stored.id]


def test_a_failing_transcription_keeps_the_file_and_says_so(settings, db, user, model, make_runtime, speech):
    speech.status = 500
    session = make_session(db, user.id)
    note = attach(settings, db, user.id, session.id, OGG_OPUS, "voice.ogg")
    model.script(text("Sorry."))
    run(db, make_runtime(stt_base_url=speech.base_url, llm_max_retries=0), user.id, session.id, "", [note])
    said = user_message(model.requests[0])["content"]
    assert "not transcribed: The speech-to-text service answered HTTP 500" in said and note.path in said


def test_without_stt_the_user_is_told_how_to_enable_it(settings, db, user, model, make_runtime):
    session = make_session(db, user.id)
    note = attach(settings, db, user.id, session.id, OGG_OPUS, "voice.ogg")
    model.script(text("I cannot hear it yet."))
    run(db, make_runtime(stt_base_url=None), user.id, session.id, "", [note])
    said = user_message(model.requests[0])["content"]
    assert "STT_BASE_URL" in said and "STT_MODEL" in said and note.path in said
    assert said.count("\n") <= 2


def test_a_pdf_is_saved_and_read_with_read_file(settings, db, user, model, make_runtime):
    session = make_session(db, user.id)
    doc = attach(settings, db, user.id, session.id, pdf_with_text("Invoice 4711 total 99 EUR"), "invoice.pdf")
    model.script(tool_call([("read_file", {"path": doc.path})]), text("The total is 99 EUR."))
    done = run(db, make_runtime(), user.id, session.id, "what is the total?", [doc])
    assert done.output == "The total is 99 EUR."
    said = user_message(model.requests[0])["content"]
    assert doc.path in said and "read it with read_file" in said
    result = [m for m in model.requests[1].body["messages"] if m["role"] == "tool"][-1]["content"]
    assert "Invoice 4711 total 99 EUR" in result


def test_a_blind_model_with_a_vision_model_configured_asks_vision_analyze(settings, db, user, model, make_runtime):
    session = make_session(db, user.id)
    photo = attach(settings, db, user.id, session.id, PNG, "cat.png")
    model.script(tool_call([("vision_analyze", {"path": photo.path, "question": "What animal?"})]),
                 text("A tabby cat on a sofa."), text("It is a tabby cat."))
    runtime = make_runtime(llm_vision=False, vision_model="vision-test")
    assert run(db, runtime, user.id, session.id, "what is this?", [photo]).output == "It is a tabby cat."
    first, asked, last = model.requests[:3]
    assert "vision_analyze" in [t["function"]["name"] for t in first.body["tools"]]
    assert "call vision_analyze" in user_message(first)["content"] and image_parts(first) == []
    assert asked.body["model"] == "vision-test" and "tools" not in asked.body
    assert user_message(asked)["content"][0]["text"] == "What animal?" and len(image_parts(asked)) == 1
    assert "A tabby cat on a sofa." in [m for m in last.body["messages"] if m["role"] == "tool"][-1]["content"]


def test_vision_analyze_is_not_offered_without_a_vision_model(settings, db, user, model, make_runtime):
    session = make_session(db, user.id)
    model.script(text("hi"))
    run(db, make_runtime(vision_model=None), user.id, session.id, "hello", [])
    assert "vision_analyze" not in [t["function"]["name"] for t in model.requests[0].body.get("tools") or []]


def test_vision_analyze_refuses_what_is_not_an_image_in_the_workspace(settings, db, user, model, make_runtime):
    session = make_session(db, user.id)
    doc = attach(settings, db, user.id, session.id, b"just words\n", "notes.txt")
    model.script(tool_call([("vision_analyze", {"path": doc.path})]),
                 tool_call([("vision_analyze", {"path": "../../../../etc/passwd"})]), text("done"))
    run(db, make_runtime(vision_model="vision-test"), user.id, session.id, "look", [doc])
    results = [m["content"] for m in model.requests[2].body["messages"] if m["role"] == "tool"]
    assert "is not a PNG, JPEG, GIF or WebP image" in results[-2] and "outside the workspace" in results[-1]
    assert len(model.requests) == 3  # the vision model was never asked


def test_the_scripted_models_echo_says_which_images_it_saw(settings, db, user, model, make_runtime):
    session = make_session(db, user.id)
    photo = attach(settings, db, user.id, session.id, PNG, "cat.png")
    done = run(db, make_runtime(llm_vision=True), user.id, session.id, "look", [photo])
    assert done.output.endswith("[saw 1 image(s): image/png]")


def test_the_turn_start_read_says_whether_the_turn_carries_files(settings, db, user):
    """A turn reads its attachments only when the session row's read says it has some: most turns carry none."""
    chat = make_session(db, user.id)
    photo = attach(settings, db, user.id, chat.id, PNG, "cat.png")
    with_photo, _, _ = turns.accept_turn(db, user.id, chat.id, "look", attachment_ids=[photo.id])
    plain, _, _ = turns.accept_turn(db, user.id, chat.id, "and now?")

    assert sessions.turn_start(db, chat.id, None, turn_id=with_photo.id).has_files
    assert not sessions.turn_start(db, chat.id, None, turn_id=plain.id).has_files
