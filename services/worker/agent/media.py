"""The files a turn carries, made ready once before the loop's first model call.

Each attachment becomes one line of the turn's text (shared/media/refs.py) so that none is ever dropped
silently. Voice notes are transcribed here, off the api's request path: the transcript, marked as spoken,
becomes the turn's text and is stored on the attachment and in the user message (where session search
finds it). Images go to the model as content parts when it takes them (shared/llm/vision.py); otherwise the
line points at `vision_analyze` when a vision model is configured, or says nothing can see it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from shared.config import Settings
from shared.db import Database
from shared.errors import HermesError
from shared.llm.audio import stt_configured, transcribe
from shared.llm.vision import IMAGE_MAX_BYTES, model_sees_images, vision_configured
from shared.media import refs, sniff
from shared.media.inbox import workspace_of
from shared.models.attachments import Attachment
from shared.models.sessions import Message
from shared.models.turns import Turn
from shared.security.paths import resolve_inside
from shared.stores import attachments

log = logging.getLogger(__name__)

IMAGE_MARK = "[image attached: "


@dataclass
class Prepared:
    """The user message's text with its files, and the image parts this turn's model calls carry."""

    text: str
    images: list[dict] = field(default_factory=list)


def prepare(settings: Settings, db: Database, turn: Turn, message: Message) -> Prepared | None:
    """Transcribe, describe and link the turn's files; None when it carries none. Safe to run again."""
    files = attachments.for_turn(db, turn.id)
    if not files:
        return None
    if any(f.message_id is None for f in files):
        attachments.link_message(db, turn.id, message.id)
    failures = {f.id: _heard(settings, db, f) for f in files if f.kind == "audio" and f.transcript is None}
    lines, images = _lines(settings, files, failures)
    transcripts = [f.transcript for f in files if f.kind == "audio" and f.transcript]
    text = "\n".join([refs.spoken_text(transcripts, turn.input), *lines]).strip()
    if message.content != text:
        attachments.set_message_text(db, message.id, text)
        message.content = text
    return Prepared(text, images)


def images_again(settings: Settings, db: Database, turn: Turn, text: str) -> list[dict]:
    """A resumed attempt: the image parts of a turn whose text was fixed by an earlier attempt."""
    if IMAGE_MARK not in text or not model_sees_images(settings):
        return []
    return [part for f in attachments.for_turn(db, turn.id) if f.kind == "image"
            for part in [_image_part(settings, f)] if part]


def _lines(settings: Settings, files: list[Attachment], failures: dict[str, str | None]) -> tuple[list[str], list]:
    sees, tool = model_sees_images(settings), vision_configured(settings)
    lines, images = [], []
    for f in files:
        if f.kind == "image":
            part = _image_part(settings, f) if sees else None
            images += [part] if part else []
            lines.append(refs.image_line(f, seen=part is not None, tool=tool))
        elif f.kind == "audio":
            failed = failures.get(f.id)
            lines.append(refs.saved_line(f, f"not transcribed: {failed}") if failed else refs.audio_line(f))
        else:
            lines.append(refs.document_line(f))
    if any(f.kind == "audio" and f.transcript is None for f in files) and not stt_configured(settings):
        lines.append(f"[{refs.STT_HELP} Tell the user so in one line.]")
    return lines, images


def _heard(settings: Settings, db: Database, f: Attachment) -> str | None:
    """Transcribe a voice note once (the transcript is stored); why it failed, or None."""
    if not stt_configured(settings):
        return None
    path = _file(settings, f)
    if path is None:
        return "the file is no longer in the workspace"
    try:
        f.transcript = transcribe(settings, path, f.filename, f.mime)
    except HermesError as exc:
        log.warning("voice note %s not transcribed: %s", f.id, exc.message)
        return exc.message
    attachments.set_transcript(db, f.id, f.transcript)
    return None


def _image_part(settings: Settings, f: Attachment) -> dict | None:
    """An OpenAI `image_url` part with the file as a data URL; None when it is gone, too large or no image now."""
    path = _file(settings, f)
    if path is None or path.stat().st_size > IMAGE_MAX_BYTES:  # a larger one is named, not sent
        return None
    return sniff.image_part(path.read_bytes())  # None when the agent has replaced the file since


def _file(settings: Settings, f: Attachment) -> Path | None:
    """The attachment's file in its owner's workspace (links leading outside refused), None when gone."""
    try:
        path = resolve_inside(workspace_of(settings, f.user_id), f.path)
    except HermesError:
        return None
    return path if path.is_file() else None
