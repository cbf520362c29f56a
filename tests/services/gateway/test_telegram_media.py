"""Telegram media in the gateway, piece by piece: which file a message carries, the 20 MB bot limit judged before
a download, how a file goes out (photo, voice, audio, document), and a file item going out while its turn runs."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from services.gateway.delivery import Delivery
from services.gateway.platforms import telegram_media as media

pytestmark = pytest.mark.once


def message(**kinds):
    base = {"message_id": 7, "photo": (), "voice": None, "audio": None, "document": None}
    return SimpleNamespace(**{**base, **kinds})


def test_the_largest_photo_size_is_taken_and_names_are_only_hints():
    sizes = (SimpleNamespace(file_id="small", file_size=900, width=90, height=90),
             SimpleNamespace(file_id="big", file_size=90_000, width=1280, height=960))
    assert media.incoming(message(photo=sizes)) == media.Incoming("big", 90_000, "photo_7.jpg", "photo")
    voice = SimpleNamespace(file_id="v", file_size=10)
    assert media.incoming(message(voice=voice)).filename == "voice_7.ogg"
    doc = SimpleNamespace(file_id="d", file_size=None, file_name=None)
    assert media.incoming(message(document=doc)) == media.Incoming("d", None, "document_7", "document")
    assert media.incoming(message()) is None


def test_the_bot_download_limit_is_judged_from_the_announced_size():
    assert media.too_big(20 * 1024 * 1024) is None and media.too_big(None) is None
    said = media.too_big(20 * 1024 * 1024 + 1)
    assert "20 MB" in said and "20.0 MB" in said


@pytest.mark.parametrize("meta, method", [
    ({"kind": "image", "mime": "image/jpeg", "size": 1000}, "photo"),
    ({"kind": "image", "mime": "image/png", "size": 11 * 1024 * 1024}, "document"),
    ({"kind": "audio", "mime": "audio/ogg", "size": 10}, "voice"),
    ({"kind": "audio", "mime": "audio/mpeg", "size": 10}, "audio"),
    ({"kind": "document", "mime": "application/pdf", "size": 10}, "document"),
    ({"kind": "document", "mime": "image/jpeg", "size": 10}, "document"),
])
def test_images_go_as_photos_ogg_as_voice_other_audio_as_audio_the_rest_as_documents(meta, method):
    assert media.method_for(meta) == method


def test_a_file_item_goes_out_while_its_turn_still_runs_but_the_turns_text_reply_waits():
    sent: list[str] = []
    reported = asyncio.Event()

    class Api:
        async def outbox_due(self):
            return [{"id": "out_text", "turn_id": "turn_1", "text": "answer", "target": "telegram:1"},
                    {"id": "out_file", "turn_id": "turn_1", "text": "", "attachment_id": "att_1",
                     "target": "telegram:1"}]

        async def outbox_awaiting(self):
            return []

        async def outbox_report(self, item_id, ok, *_a):
            sent.append(item_id)
            reported.set()

    class Platform:
        async def send(self, dest, item, ref):
            pass

    gateway = SimpleNamespace(api=Api(), platforms={"telegram": Platform()})
    delivery = Delivery(gateway)
    delivery.live["turn_1"] = 1

    async def one_pass():
        loop = asyncio.create_task(delivery.run())
        await reported.wait()
        loop.cancel()

    asyncio.run(asyncio.wait_for(one_pass(), 10))
    assert sent == ["out_file"]


def test_a_download_longer_than_the_bot_limit_is_cut_off_whatever_size_was_announced():
    async def endless():
        while True:
            yield b"x" * (1024 * 1024)

    async def drain():
        async for _chunk in media._bounded(endless()):
            pass

    with pytest.raises(media.MediaRefused, match="20 MB"):
        asyncio.run(drain())


def test_a_question_sent_while_a_photo_uploads_starts_its_turn_after_the_photos():
    """Reproduction of a phone habit: a photo, then "what is this?" at once; the text must not overtake it."""
    from services.gateway.conversation import ChatRunner

    started: list[tuple[str, list[str]]] = []

    class Api:
        async def chat_session(self, *_a, **_k):
            return "ses_1"

        async def stream_turn(self, _user, _session, text, accepted, attachments=None):
            started.append((text, attachments))
            await accepted(f"turn_{len(started)}")
            return
            yield

        async def turn(self, *_a):
            return {"status": "completed", "output": "ok"}

    class Surface:
        async def typing(self):
            pass

        async def expect(self, turn_id):
            pass

        async def final(self, text, ref, turn_id):
            pass

        def release(self, turn_id):
            pass

    async def chat():
        runner = ChatRunner(Api(), "usr", "key", Surface())
        uploaded = asyncio.Event()

        async def slow_upload():
            await uploaded.wait()
            return ["att_photo"]

        async def refused_upload():
            return None  # the sender was told why; no turn

        runner.submit("", asyncio.ensure_future(slow_upload()))
        runner.submit("", asyncio.ensure_future(refused_upload()))
        runner.submit("what is this?")
        for _ in range(50):  # let every ready task run (no I/O here: the runner can only be waiting on the upload)
            await asyncio.sleep(0)
        assert started == [], "the question waits for the photo ahead of it"
        uploaded.set()
        await asyncio.wait_for(runner.task, 10)

    asyncio.run(chat())
    assert started == [("", ["att_photo"]), ("what is this?", [])]
