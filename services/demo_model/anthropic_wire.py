"""Anthropic Messages wire format: the bodies and stream events the scripted model sends at /v1/messages."""

from __future__ import annotations

import json
import uuid
from typing import Callable, Iterator

from services.demo_model.openai_wire import ARGUMENT_PIECE, word_chunks
from services.demo_model.prefix_cache import PromptUsage
from services.demo_model.replies import Reply, usage_for

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}
STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def _input(arguments: str) -> dict:
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _frame(payload: dict) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


class AnthropicWire:
    """Builds one Messages response, streamed (named SSE events) or whole."""

    def __init__(self, body: dict, prompt: PromptUsage | Callable[[], PromptUsage] | None = None) -> None:
        self.body = body
        self.prompt = prompt() if callable(prompt) else prompt  # message_start reports the usage first
        self.id = f"msg_{uuid.uuid4().hex[:24]}"
        self.model = body.get("model") or "scripted"

    @staticmethod
    def error_body(status: int, message: str | None) -> dict:
        """Anthropic's error shape: {"type": "error", "error": {"type", "message"}}."""
        kind = ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message or f"HTTP {status}"}}

    def _usage(self, reply: Reply) -> dict:
        """Anthropic counts cached tokens apart: `input_tokens` is only the part read fresh."""
        usage = usage_for(reply, self.body, self.prompt)
        cached = usage["prompt_tokens_details"]["cached_tokens"]
        return {"input_tokens": usage["prompt_tokens"] - cached, "output_tokens": usage["completion_tokens"],
                "cache_creation_input_tokens": 0, "cache_read_input_tokens": cached}

    def _stop_reason(self, reply: Reply) -> str:
        reason = reply.final_reason()
        return STOP_REASONS.get(reason, reason)

    def completion(self, reply: Reply) -> dict:
        """The non-streamed `message` object."""
        content = [{"type": "text", "text": reply.text}] if reply.text else []
        content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": _input(c.arguments)}
                    for c in reply.tool_calls]
        return {"id": self.id, "type": "message", "role": "assistant", "model": self.model, "content": content,
                "stop_reason": self._stop_reason(reply), "stop_sequence": None, "usage": self._usage(reply)}

    def frames(self, reply: Reply) -> Iterator[bytes]:
        """message_start, content blocks with their deltas, message_delta, message_stop."""
        usage = self._usage(reply)
        start = {"id": self.id, "type": "message", "role": "assistant", "model": self.model, "content": [],
                 "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1}}
        yield _frame({"type": "message_start", "message": start})
        yield _frame({"type": "ping"})
        index = 0
        if reply.text:
            yield _frame({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
            for piece in word_chunks(reply.text):
                yield _frame({"type": "content_block_delta", "index": 0,
                              "delta": {"type": "text_delta", "text": piece}})
            yield _frame({"type": "content_block_stop", "index": 0})
            index = 1
        for offset, call in enumerate(reply.tool_calls, start=index):
            block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
            yield _frame({"type": "content_block_start", "index": offset, "content_block": block})
            for i in range(0, len(call.arguments), ARGUMENT_PIECE):
                delta = {"type": "input_json_delta", "partial_json": call.arguments[i:i + ARGUMENT_PIECE]}
                yield _frame({"type": "content_block_delta", "index": offset, "delta": delta})
            yield _frame({"type": "content_block_stop", "index": offset})
        yield _frame({"type": "message_delta", "delta": {"stop_reason": self._stop_reason(reply),
                                                         "stop_sequence": None},
                      "usage": {"output_tokens": usage["output_tokens"]}})
        yield _frame({"type": "message_stop"})
