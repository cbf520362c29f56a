"""`send_file`: the agent sends a file from its workspace to the chat it is talking to.

The file is registered as an outbound attachment of the session and queued in the gateway's outbox in one
transaction (shared/stores/sent_files.py); the gateway uploads it — images as photos, OGG/Opus as a voice
note, other audio as audio, the rest as documents — with the outbox's retries, after a restart too. Offered
only in sessions a chat continues (services/worker/tools/toolsets.py), so a plain API session's first call
carries none of its bytes.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from shared.db import get_database
from shared.errors import InvalidInput
from shared.media import sniff
from shared.media.names import safe_name
from shared.security.paths import relative_parts
from shared.stores import gateway_chats, sent_files
from services.worker.tools.registry import Tool, ToolContext
from services.worker.tools.workspace import open_regular, opened

MAX_SEND_BYTES = 50 * 1024 * 1024  # what a bot may upload to Telegram
CAPTION_CHARS = 1024  # Telegram's caption limit
READ_CHUNK = 1024 * 1024
OCTET = sniff.FileType("document", "application/octet-stream", "bin")


def send_file(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    db = get_database(ctx.settings.sqlalchemy_url)
    chat = gateway_chats.chat_target(db, ctx.session_id)
    if chat is None:
        raise InvalidInput("send_file: this conversation has no chat to send to (it is not a Telegram chat).",
                           code="no_chat")
    path = str(args["path"])
    caption = str(args.get("caption") or "")[:CAPTION_CHARS]
    kind, size, digest = _read(ctx, path)
    where = "/".join(relative_parts(path))
    sent = sent_files.send(db, user_id=ctx.user_id, session_id=ctx.session_id, turn_id=ctx.turn_id,
                           target=chat[0], chat_id=chat[1], caption=caption, kind=kind.kind,
                           filename=safe_name(os.path.basename(where), kind.extension), mime=kind.mime, size=size,
                           path=where, sha256=digest)
    state = "queued for delivery" if sent.new else "already queued in this turn (not sent twice)"
    return {"file": where, "bytes": size, "as": _as(kind), "status": state, "attachment_id": sent.attachment.id}


def _read(ctx: ToolContext, path: str) -> tuple[sniff.FileType, int, str]:
    """The file's type (by content), size and sha256, read beneath the workspace (a link is refused)."""
    with opened(ctx) as ws, open_regular(ws, path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            raise InvalidInput(f"send_file: {path} is empty; there is nothing to send.")
        if size > MAX_SEND_BYTES:
            raise InvalidInput(f"send_file: {path} is {size} bytes; a chat takes files up to {MAX_SEND_BYTES} "
                               "bytes. Compress or split it first.")
        head = fh.read(sniff.HEAD_BYTES)
        digest = hashlib.sha256(head)
        for chunk in iter(lambda: fh.read(READ_CHUNK), b""):
            digest.update(chunk)
    return _kind_of(head), size, digest.hexdigest()


def _kind_of(head: bytes) -> sniff.FileType:
    """What the bytes are: an image, audio or a known document; else text; else an opaque document."""
    known = sniff.by_magic(head)
    if known is not None:
        return known
    return sniff.TEXT if sniff.looks_textual(head) else OCTET


def _as(kind: sniff.FileType) -> str:
    if kind.kind == "image":
        return "photo"
    if kind.kind == "audio":
        return "voice note" if kind.mime == "audio/ogg" else "audio"
    return "document"


SEND_FILE = Tool(
    name="send_file",
    description="Send a workspace file to this chat.",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string"}, "caption": {"type": "string"}},
        "required": ["path"],
    },
    handler=send_file,
)
