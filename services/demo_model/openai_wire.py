"""OpenAI chat-completions wire format: the bodies and stream chunks the scripted model sends."""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Callable, Iterator

from services.demo_model.prefix_cache import PromptUsage
from services.demo_model.replies import Reply, usage_for

ARGUMENT_PIECE = 7

ERROR_TYPES = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "permission_denied"),
    404: ("invalid_request_error", "model_not_found"),
    422: ("invalid_request_error", "invalid_request"),
    429: ("requests", "rate_limit_exceeded"),
}


def error_body(status: int, message: str | None) -> dict:
    """OpenAI's error shape: {"error": {"message", "type", "code"}}."""
    kind, code = ERROR_TYPES.get(status, ("server_error", "server_error"))
    return {"error": {"message": message or f"HTTP {status}", "type": kind, "param": None, "code": code}}


def word_chunks(content: str) -> list[str]:
    """Split text into word-sized pieces that join back to exactly the original."""
    return re.findall(r"\s*\S+\s*|\s+", content) if content else []


def _pieces(raw: str) -> list[str]:
    return [raw[i:i + ARGUMENT_PIECE] for i in range(0, len(raw), ARGUMENT_PIECE)] or [""]


class Wire:
    """Builds one response's bodies, sharing its id, creation time and model name.

    `prompt` may be given as a function: a streamed reply reports its usage only in its last chunk, so
    measuring the prompt cache waits until then instead of delaying the first delta.
    """

    error_body = staticmethod(error_body)

    def __init__(self, body: dict, prompt: PromptUsage | Callable[[], PromptUsage] | None = None) -> None:
        self.body = body
        self._prompt = prompt
        self.id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        self.created = int(time.time())
        self.model = body.get("model") or "scripted"

    @property
    def prompt(self) -> PromptUsage | None:
        if callable(self._prompt):
            self._prompt = self._prompt()
        return self._prompt

    def completion(self, reply: Reply) -> dict:
        """The non-streamed `chat.completion` object."""
        message: dict = {"role": "assistant", "content": reply.text, "refusal": None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in reply.tool_calls
            ]
        return {
            "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
            "system_fingerprint": None,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": reply.final_reason()}],
            "usage": usage_for(reply, self.body, self.prompt),
        }

    def _chunk(self, delta: dict, finish_reason: str | None = None) -> dict:
        return {
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }

    def chunks(self, reply: Reply) -> Iterator[dict]:
        """Every `chat.completion.chunk` of a streamed reply, in order."""
        yield self._chunk({"role": "assistant", "content": ""})
        for piece in word_chunks(reply.text or ""):
            yield self._chunk({"content": piece})
        for index, call in enumerate(reply.tool_calls):
            head = {"index": index, "id": call.id, "type": "function",
                    "function": {"name": call.name, "arguments": ""}}
            yield self._chunk({"tool_calls": [head]})
            for piece in _pieces(call.arguments):
                yield self._chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield self._chunk({}, reply.final_reason())
        if (self.body.get("stream_options") or {}).get("include_usage"):
            yield {
                "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                "system_fingerprint": None, "choices": [], "usage": usage_for(reply, self.body, self.prompt),
            }

    def frames(self, reply: Reply) -> Iterator[bytes]:
        """The server-sent events of a streamed reply, ending with `data: [DONE]`."""
        for chunk in self.chunks(reply):
            yield f"data: {json.dumps(chunk)}\n\n".encode()
        yield b"data: [DONE]\n\n"
