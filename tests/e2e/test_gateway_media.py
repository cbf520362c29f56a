"""Media through the real gateway, api and worker with a fake Bot API, the scripted model and a fake speech server:
a photo the model sees, a voice note it hears, a PDF it reads, a file it sends back (once, across a gateway
SIGKILL), and what is refused — over Telegram's 20 MB bot limit, a disguised program, a stranger's file."""

from __future__ import annotations

import base64
import json
import signal
from datetime import datetime, timezone

import pytest

from tests.e2e.test_gateway_telegram import paired
from tests.fakes.model import text, tool_call
from tests.fakes.speech import FakeSpeech
from tests.fakes.tts import OPUS as SPOKEN
from tests.fakes.tts import FakeTTS
from tests.support.media import pdf_with_text
from tests.support.gateway import gateway_env, start_gateway
from tests.support.processes import Stack
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.once]

JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + bytes(range(256)) * 4 + b"\xff\xd9"
OPUS = b"OggS\x00\x02" + b"\x00" * 22 + b"\x13OpusHead\x01\x01" + b"\x00" * 300
ELF = b"\x7fELF\x02\x01\x01" + b"\x00" * 500
TRANSCRIPT = "please water the basil on the balcony tonight"


@pytest.fixture(scope="module")
def stt():
    server = FakeSpeech(text=TRANSCRIPT).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def tts():
    server = FakeTTS()
    yield server
    server.close()


@pytest.fixture(scope="module")
def stack(fake_model, telegram, stt, tts):
    env = {**gateway_env(), "APPROVAL_MODE": "off", "TERMINAL_SANDBOX": "none", "LLM_VISION": "true",
           "STT_BASE_URL": stt.base_url, "STT_MODEL": "whisper-test", "TTS_BASE_URL": tts.url,
           "OUTBOX_BACKOFF_BASE_SECONDS": "0.2", "OUTBOX_BACKOFF_MAX_SECONDS": "1"}
    s = Stack(model_url=fake_model.base_url, env_overrides=env)
    with s:
        s.start_api()
        s.start_worker()
        s.gateway, s.gateway_port = start_gateway(s, telegram=telegram)
        yield s


def today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


def saved(stack: Stack, pattern: str) -> list:
    return sorted(stack.data_dir.glob(f"users/*/workspace/inbox/*/{pattern}"))


def request_with(model, needle: str):
    return next((r for r in reversed(model.requests) if needle in json.dumps(r.body)), None)


def test_a_photo_reaches_the_model_as_an_image_part_and_is_kept_in_the_workspace(stack, telegram, model):
    paired(stack, telegram, 5201, "Painter")
    model.on("what is on this photo", text("A small test card."))
    telegram.user_sends(5201, "photo", JPEG, caption="what is on this photo?")
    telegram.wait_text(5201, "A small test card.")
    asked = request_with(model, "what is on this photo")
    parts = [p for m in asked.body["messages"] if m["role"] == "user" and isinstance(m["content"], list)
             for p in m["content"]]
    images = [p for p in parts if p.get("type") == "image_url"]
    assert images and images[0]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert base64.b64decode(images[0]["image_url"]["url"].split(",", 1)[1]) == JPEG
    [kept] = saved(stack, "photo_*")
    assert kept.read_bytes() == JPEG and kept.parent.name == today()


def test_a_voice_note_is_transcribed_and_answered(stack, telegram, model, stt):
    paired(stack, telegram, 5202, "Speaker")
    model.on("water the basil", text("I will remind you about the basil."))
    before = len(stt.received)
    telegram.user_sends(5202, "voice", OPUS)
    telegram.wait_text(5202, "I will remind you about the basil.")
    assert len(stt.received) == before + 1
    assert OPUS in stt.received[-1]["body"] and b"whisper-test" in stt.received[-1]["body"]
    assert TRANSCRIPT in json.dumps(request_with(model, "water the basil").body)
    assert [p.read_bytes() for p in saved(stack, "voice_*")] == [OPUS]


def test_a_pdf_is_saved_and_the_agent_reads_it_with_read_file(stack, telegram, model):
    paired(stack, telegram, 5203, "Reader")
    path = f"inbox/{today()}/minutes.pdf"
    model.on("summarise the minutes", tool_call([("read_file", {"path": path})]),
             text("The minutes say the launch is on Thursday."))
    telegram.user_sends(5203, "document", pdf_with_text("Decision: the launch moves to Thursday."),
                        file_name="minutes.pdf", mime="application/pdf", caption="summarise the minutes")
    telegram.wait_text(5203, "The minutes say the launch is on Thursday.")
    final = request_with(model, "summarise the minutes")
    results = [m["content"] for m in final.body["messages"] if m["role"] == "tool"]
    assert any("launch moves to Thursday" in str(r) for r in results), results
    assert path in json.dumps(final.body), "the turn said where the file was saved"


def test_a_file_the_agent_makes_arrives_as_a_document_exactly_once_across_a_gateway_sigkill(stack, telegram, model):
    paired(stack, telegram, 5204, "Receiver")
    report = "week,rain_mm\n1,12\n2,3\n"
    model.on("rain report please",
             tool_call([("write_file", {"path": "reports/rain.csv", "content": report})]),
             tool_call([("send_file", {"path": "reports/rain.csv", "caption": "Rain by week"})], latency=5.0),
             text("Sent you the rain report."))
    telegram.user_says(5204, "rain report please")
    wait_until(lambda: request_with(model, "reports/rain.csv") and any(
        m.get("role") == "tool" for m in request_with(model, "reports/rain.csv").body["messages"]) or None,
        timeout=60, what="the model asked for send_file's turn")
    stack.gateway.signal(signal.SIGKILL)  # the file is queued while no gateway runs
    stack.gateway.popen.wait(10)
    with stack.client() as admin:
        wait_until(lambda: [i for i in admin.get("/v1/admin/outbox", params={"status": "pending"}).json()
                            if i["chat_id"] == "5204" and i.get("attachment_id")] or None,
                   timeout=60, what="the file queued in the outbox")
    telegram.fail_next("sendDocument", 429, retry_after=1)  # its first try after the restart is refused
    stack.gateway, stack.gateway_port = start_gateway(stack, telegram=telegram, port=stack.gateway_port)
    telegram.wait_text(5204, "Sent you the rain report.", timeout=60)
    wait_until(lambda: telegram.files_sent(5204) or None, timeout=60, what="the document to arrive")
    with stack.client() as admin:
        wait_until(lambda: [i for i in admin.get("/v1/admin/outbox", params={"status": "sent"}).json()
                            if i["chat_id"] == "5204" and i.get("attachment_id")] or None,
                   timeout=30, what="the file marked sent")
        items = [i for s in ("pending", "sent", "failed")
                 for i in admin.get("/v1/admin/outbox", params={"status": s}).json() if i["chat_id"] == "5204"]
    [sent] = telegram.files_sent(5204)
    assert sent["method"] == "sendDocument" and sent["data"] == report.encode()
    assert sent["caption"] == "Rain by week" and sent["filename"] == "rain.csv"
    [item] = [i for i in items if i.get("attachment_id")]
    assert item["attempts"] >= 2, "refused once (429), then sent"
    assert len(telegram.sent(5204, "sendDocument")) == 2, "one refused try and one delivery, never a copy"


def test_a_spoken_reply_arrives_as_a_voice_note(stack, telegram, model, tts):
    paired(stack, telegram, 5208, "Listener")
    model.on("say it out loud", tool_call([("text_to_speech", {"text": "Good night.", "path": "speech/night.ogg"})]),
             tool_call([("send_file", {"path": "speech/night.ogg"})]), text("Said it."))
    telegram.user_says(5208, "say it out loud")
    telegram.wait_text(5208, "Said it.")
    wait_until(lambda: telegram.files_sent(5208) or None, timeout=30, what="the voice note")
    [voice] = telegram.files_sent(5208)
    assert voice["method"] == "sendVoice" and voice["data"] == SPOKEN
    assert tts.requests[-1]["body"]["input"] == "Good night."


def test_a_file_over_telegrams_20_mb_bot_limit_gets_a_clear_message_and_is_never_downloaded(stack, telegram,
                                                                                            model):
    paired(stack, telegram, 5205, "Hoarder")
    file_id = telegram.user_sends(5205, "document", b"tiny", file_name="film.mkv",
                                  announced_size=25 * 1024 * 1024, caption="keep this film")
    reply = telegram.wait_text(5205, "20 MB")
    assert "25.0 MB" in reply and "smaller" in reply
    assert not telegram.fetched(file_id), "refused from the announced size, before any download"
    assert request_with(model, "keep this film") is None, "the agent was never asked"


def test_a_program_disguised_as_an_image_is_refused_and_a_hostile_name_is_neutralised(stack, telegram, model):
    paired(stack, telegram, 5206, "Trickster")
    telegram.user_sends(5206, "document", ELF, file_name="cat.png", mime="image/png", caption="look at my cat")
    telegram.wait_text(5206, "not a type I take")
    assert request_with(model, "look at my cat") is None
    model.on("read my notes", text("Noted."))
    telegram.user_sends(5206, "document", b"just notes\n", file_name="../../../etc/cron.d/evil\x00.txt",
                        caption="read my notes")
    telegram.wait_text(5206, "Noted.")
    inside = [p for p in stack.data_dir.rglob("*") if p.is_file() and p.read_bytes() == b"just notes\n"]
    assert len(inside) == 1 and "/workspace/inbox/" in str(inside[0]) and "evil" in inside[0].name
    assert not list(stack.data_dir.rglob("etc/cron.d*"))


def test_an_unpaired_users_photo_never_reaches_the_api(stack, telegram, model):
    file_id = telegram.user_sends(5207, "photo", JPEG, caption="sneaky photo", first_name="Stranger")
    telegram.wait_text(5207, "pairing code")
    assert not telegram.fetched(file_id)
    assert request_with(model, "sneaky photo") is None
