"""What the scripted model answers: `Reply` and the helpers that build one."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Union

from services.demo_model.prefix_cache import PromptUsage, serialize, tokens


@dataclass(frozen=True)
class ScriptedCall:
    """One tool call the model will make; `arguments` is the raw JSON text sent on the wire."""

    id: str
    name: str
    arguments: str


@dataclass
class Reply:
    """One scripted answer: text and/or tool calls, or an HTTP error when `status` is not 200."""

    text: str | None = None
    tool_calls: list[ScriptedCall] = field(default_factory=list)
    status: int = 200
    message: str | None = None
    retry_after: float | str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    latency: float | None = None
    chunk_delay: float = 0.0
    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    drop_after: int | None = None  # hang up after this many stream events (0: before answering at all)

    def __post_init__(self) -> None:
        self.tool_calls = [c if isinstance(c, ScriptedCall) else _call(tuple(c)) for c in self.tool_calls]

    @property
    def is_error(self) -> bool:
        return self.status >= 400

    def final_reason(self) -> str:
        """The finish_reason sent with the last choice."""
        if self.finish_reason:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


Responder = Callable[[dict], Reply]
Scripted = Union[Reply, Responder]


def text(content: str, latency: float | None = None, chunk_delay: float = 0.0, **kwargs: Any) -> Reply:
    """A plain text answer (streamed word by word when the client streams)."""
    return Reply(text=content, latency=latency, chunk_delay=chunk_delay, **kwargs)


def _call(spec: tuple) -> ScriptedCall:
    name, arguments, *rest = spec
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    call_id = rest[0] if rest else f"call_{uuid.uuid4().hex[:24]}"
    return ScriptedCall(id=call_id, name=name, arguments=raw)


def tool_call(calls: list[tuple], text: str | None = None, **kwargs: Any) -> Reply:
    """Tool calls given as (name, args) or (name, args, id); args is a dict or a raw (maybe broken) string."""
    return Reply(text=text, tool_calls=[_call(spec) for spec in calls], **kwargs)


def fail(status: int = 429, message: str = "slow down", retry_after: float | str | None = None,
         **kwargs: Any) -> Reply:
    """An HTTP error in OpenAI's error shape, with a Retry-After header when given."""
    return Reply(status=status, message=message, retry_after=retry_after, **kwargs)


def message_text(message: dict) -> str:
    """The text of one chat message, whether its content is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _only_tool_results(message: dict) -> bool:
    content = message.get("content")
    return isinstance(content, list) and bool(content) and all(
        isinstance(part, dict) and part.get("type") == "tool_result" for part in content)


def latest_user_text(body: dict) -> str:
    """The content of the last message whose role is "user" ("" when there is none).

    Anthropic carries tool results in user messages; those are not what the user said, so they are skipped.
    """
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user" and not _only_tool_results(message):
            return message_text(message)
    return ""


# A recalled block the stack appends to a user message: other sessions' words, not what the user said now.
RECALLED = re.compile(r"\s*<memory-context>.*?</memory-context>", re.DOTALL)


def own_words(text: str) -> str:
    """A user message's text without the recalled blocks the stack appended to it."""
    return RECALLED.sub("", text)


def latest_user_images(body: dict) -> list[str]:
    """The media types of the images the latest user message carries (OpenAI image_url data URLs, Anthropic
    image blocks): what a scripted run shows it was sent."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user" and not _only_tool_results(message):
            content = message.get("content")
            parts = content if isinstance(content, list) else []
            return [_image_type(part) for part in parts if isinstance(part, dict)
                    and part.get("type") in ("image_url", "image")]
    return []


def _image_type(part: dict) -> str:
    if part.get("type") == "image":
        return str((part.get("source") or {}).get("media_type") or "image")
    url = str((part.get("image_url") or {}).get("url") or "")
    return url[5:].split(";", 1)[0] if url.startswith("data:") else "image (URL)"


def usage_for(reply: Reply, body: dict, prompt: PromptUsage | None = None) -> dict:
    """The usage numbers reported for a reply: scripted ones, else the prefix cache's count (or a fresh estimate).

    `prompt_tokens_details.cached_tokens` is the part of the prompt an earlier request of the run already sent.
    """
    if reply.usage is not None:
        prompt_tokens = reply.usage.get("prompt_tokens", 0)
        completion = reply.usage.get("completion_tokens", 0)
        cached = reply.usage.get("cached_tokens", 0)
    else:
        out_chars = len(reply.text or "") + sum(len(c.name) + len(c.arguments) for c in reply.tool_calls)
        prompt = prompt or PromptUsage(tokens(len(serialize(body))), 0)
        prompt_tokens, cached, completion = prompt.prompt_tokens, prompt.cached_tokens, tokens(out_chars)
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
            "total_tokens": prompt_tokens + completion, "prompt_tokens_details": {"cached_tokens": cached}}
