"""The OpenAI endpoint takes image_url parts: data URLs and http(s) URLs fetched under the web-fetch rules,
stored in the caller's workspace inbox and carried by the turn; a bad part is one clear 400."""

from __future__ import annotations

import base64

import openai
import pytest

from services.api.image_parts import InvalidImage, save_images
from shared.media.inbox import workspace_of
from shared.stores import attachments
from tests.fakes.model import text
from tests.support import loopback
from tests.support.media import PNG

DATA_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()


@pytest.fixture
def image_server():
    """Serves PNG at /cat.png and an ELF at /fake.png on loopback."""
    class Handler(loopback.QuietHandler):
        def do_GET(self) -> None:
            self.answer(200, PNG if self.path == "/cat.png" else b"\x7fELF" + b"\x00" * 64, "image/png")

    server = loopback.serve(Handler)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    loopback.stop(server)


def test_a_data_url_image_is_stored_and_reaches_the_turn(oai, model, db, settings, user):
    model.on("what is in", text("A picture."))
    raw = oai.chat.completions.with_raw_response.create(model="scripted", messages=[{"role": "user", "content": [
        {"type": "text", "text": "what is in this picture?"},
        {"type": "image_url", "image_url": {"url": DATA_URL}}]}])
    assert raw.parse().choices[0].message.content == "A picture."
    [stored] = attachments.for_turn(db, raw.headers["x-turn-id"])
    assert stored.kind == "image" and stored.user_id == user.id
    assert (workspace_of(settings, user.id) / stored.path).read_bytes() == PNG
    said = [m for m in model.requests[-1].body["messages"] if m["role"] == "user"][-1]["content"]
    assert stored.path in str(said)


@pytest.mark.parametrize("part,words", [
    ({"type": "image_url", "image_url": {"url": "data:image/png;base64,%%%"}}, "malformed"),
    ({"type": "image_url", "image_url": {"url": "data:image/png," + "x" * 10}}, "base64"),
    ({"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(b"\x7fELF" + b"\0" * 40)
                                         .decode()}}, "ELF"),
    ({"type": "image_url", "image_url": {"url": "ftp://example.com/x.png"}}, "image_url"),
    ({"type": "image_url"}, "image_url"),
    ({"type": "input_audio", "input_audio": {}}, "only text and image_url"),
    ({"type": "image_url", "image_url": {"url": "http://127.0.0.1:9/cat.png"}}, "image 1"),
])
def test_a_bad_image_part_is_a_clear_400(oai, settings, user, part, words):
    before = {p for p in workspace_of(settings, user.id).rglob("*") if p.is_file()}
    with pytest.raises(openai.BadRequestError) as refused:
        oai.chat.completions.create(model="scripted", messages=[{"role": "user", "content": [
            {"type": "text", "text": "look"}, part]}])
    assert words in str(refused.value)
    assert {p for p in workspace_of(settings, user.id).rglob("*") if p.is_file()} == before


def test_an_http_image_is_fetched_under_the_web_fetch_rules(settings, user, image_server):
    with pytest.raises(InvalidImage, match="image 1 of the last message"):
        save_images(settings, user.id, [f"{image_server}/cat.png"])  # loopback: refused unless allowed
    allowed = settings.model_copy(update={"web_fetch_allow": "127.0.0.1"})
    [saved] = save_images(allowed, user.id, [f"{image_server}/cat.png"])
    assert saved.kind == "image" and (workspace_of(settings, user.id) / saved.path).read_bytes() == PNG
    with pytest.raises(InvalidImage, match="ELF"):
        save_images(allowed, user.id, [f"{image_server}/cat.png", f"{image_server}/fake.png"])
    assert len([p for p in workspace_of(settings, user.id).rglob("*") if p.is_file()]) == 1  # the first discarded
