"""How a turn's text refers to the files it carries, so the agent knows each one is there and where.

A file is never dropped silently: each attachment adds one line to what the model reads, naming its kind,
its path in the workspace (where the file tools reach it) and what became of it (seen, transcribed, or
to be looked at with a tool).
"""

from __future__ import annotations

from shared.models.attachments import Attachment

SPOKEN_MARKER = "[voice note, transcribed]"
STT_HELP = ("Voice notes are kept but not transcribed: set STT_BASE_URL (an OpenAI-compatible "
            "/audio/transcriptions, e.g. https://api.openai.com/v1 or a Whisper server) and STT_MODEL to enable it.")


def size_words(size: int) -> str:
    """A size as people read it: `512 bytes`, `12.0 KB`, … up to GB."""
    for unit in ("bytes", "KB", "MB"):
        if size < 1024:
            return f"{size} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def saved_line(att: Attachment, how: str = "") -> str:
    """`[image attached: inbox/2026-12-07/cat.png (image/png, 12.0 KB) …]`."""
    extra = f"; {how}" if how else ""
    return f"[{att.kind} attached: {att.path} ({att.mime}, {size_words(att.size)}){extra}]"


def image_line(att: Attachment, *, seen: bool, tool: bool) -> str:
    if seen:
        return saved_line(att, "shown to you with this message")
    if tool:
        return saved_line(att, "you cannot see it directly: call vision_analyze with this path to look at it")
    return saved_line(att, "no vision model is configured, so its content cannot be seen; tell the user")


def document_line(att: Attachment) -> str:
    return saved_line(att, "read it with read_file")


def audio_line(att: Attachment) -> str:
    if att.transcript is not None:
        return saved_line(att, "transcribed above")
    return saved_line(att, "not transcribed (no speech-to-text is configured)")


def spoken_text(transcripts: list[str], typed: str) -> str:
    """The turn's text when it carries voice: the marker, each transcript, then whatever was typed."""
    spoken = "\n".join(f"{SPOKEN_MARKER} {text.strip()}" for text in transcripts)
    return f"{spoken}\n\n{typed}".strip() if typed.strip() else spoken
