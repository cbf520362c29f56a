"""A session's stored messages shaped for the chat page: text, the tool calls an answer made, tool results.

Nothing here is trusted: the template escapes every string (autoescape), arguments included.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shared.models.attachments import Attachment
from shared.models.sessions import Message

MAX_RESULT_CHARS = 2_000


@dataclass(frozen=True)
class ToolCallView:
    name: str
    arguments: str


@dataclass(frozen=True)
class FileView:
    """A file the message carried: an image shown inline, anything else a download link."""

    id: str
    kind: str
    filename: str


@dataclass(frozen=True)
class MessageView:
    id: int
    role: str
    text: str
    tool_calls: list[ToolCallView] = field(default_factory=list)
    tool_name: str | None = None
    files: list[FileView] = field(default_factory=list)


def _call(call: dict[str, Any]) -> ToolCallView:
    function = call.get("function") or {}
    return ToolCallView(str(function.get("name") or call.get("name") or "tool"),
                        str(function.get("arguments") or call.get("arguments") or ""))


def view_of(message: Message, files: list[Attachment] | None = None) -> MessageView:
    text = message.content or ""
    if message.role == "tool" and len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + " …"
    return MessageView(id=message.id, role=message.role, text=text,
                       tool_calls=[_call(c) for c in message.tool_calls or [] if isinstance(c, dict)],
                       tool_name=message.name, files=[FileView(f.id, f.kind, f.filename) for f in files or []])


@dataclass(frozen=True)
class Transcript:
    messages: list[MessageView]

    @classmethod
    def of(cls, rows: list[Message], *, hide_turn: str | None = None,
           files: dict[int, list[Attachment]] | None = None) -> "Transcript":
        """The stored messages, minus the running turn's (the page shows its input and streams its answer live);
        `files`: the attachments of each message id."""
        files = files or {}
        return cls([view_of(m, files.get(m.id)) for m in rows
                    if m.role != "system" and (hide_turn is None or m.turn_id != hide_turn)])
