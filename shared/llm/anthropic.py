"""Anthropic Messages over httpx: one attempt, streamed or not, returned as the same Completion."""

from __future__ import annotations

import json
import uuid
from typing import Callable, Iterator

import httpx

from shared.llm import stream_end
from shared.llm.anthropic_format import build_request
from shared.llm.classify import ProviderHTTPError, ProviderProtocolError
from shared.llm.openai_compat import OnDelta, finish_of, raise_for_status
from shared.llm.sse import Shown, event_json, events_by_read
from shared.llm.types import Cancelled, Completion, ToolCall, Usage

API_VERSION = "2023-06-01"
FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length"}
ERROR_STATUSES = {"rate_limit_error": 429, "overloaded_error": 529, "api_error": 500, "timeout_error": 504,
                  "invalid_request_error": 400, "authentication_error": 401, "permission_error": 403}


def messages_url(base_url: str) -> str:
    """`…/v1/messages` whether or not LLM_BASE_URL already ends in /v1."""
    base = base_url.rstrip("/")
    return base + ("/messages" if base.endswith("/v1") else "/v1/messages")


def prompt_usage(raw: dict) -> int:
    """Every prompt token, cached or not."""
    return sum(int(raw.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                              "cache_read_input_tokens"))


class MessageAssembly(Shown):
    """Builds one Completion from Messages stream events (`text` holds the streamed text, for `flush`)."""

    def __init__(self, on_delta: OnDelta | None) -> None:
        super().__init__(on_delta)
        self.blocks: dict[int, dict] = {}
        self.stop_reason: str | None = None
        self.prompt_tokens = 0
        self.cached_tokens = 0
        self.completion_tokens = 0
        self.stopped = False

    def feed(self, event: dict) -> None:
        """Apply one stream event."""
        kind = event.get("type")
        if kind == "error":
            error = event.get("error") or {}
            raise ProviderHTTPError(ERROR_STATUSES.get(error.get("type"), 500), str(error.get("message", error)))
        if kind == "message_start":
            self.read_usage((event.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start":
            block = dict(event.get("content_block") or {})
            block["pieces"] = []
            self.blocks[event.get("index", len(self.blocks))] = block
        elif kind == "content_block_delta":
            self._delta(self.blocks.setdefault(event.get("index", 0), {"type": "text", "pieces": []}),
                        event.get("delta") or {})
        elif kind == "message_delta":
            self.stop_reason = (event.get("delta") or {}).get("stop_reason") or self.stop_reason
            self.completion_tokens = int((event.get("usage") or {}).get("output_tokens") or self.completion_tokens)
        elif kind == "message_stop":
            self.stopped = True

    def read_usage(self, raw: dict) -> None:
        """Prompt tokens (cached or not) and the part read from the prompt cache."""
        self.prompt_tokens = prompt_usage(raw)
        self.cached_tokens = int(raw.get("cache_read_input_tokens") or 0)

    def _delta(self, block: dict, delta: dict) -> None:
        if delta.get("type") == "text_delta":
            block["pieces"].append(delta.get("text", ""))
            if delta.get("text"):
                self.text.append(delta["text"])
        elif delta.get("type") == "input_json_delta":
            block["pieces"].append(delta.get("partial_json", ""))

    def result(self, model: str) -> Completion:
        text, calls = [], []
        for _, block in sorted(self.blocks.items()):
            if block.get("type") == "text":
                text.append("".join(block["pieces"]))
            elif block.get("type") == "tool_use":
                arguments = "".join(block["pieces"]) or json.dumps(block.get("input") or {})
                calls.append(ToolCall(block.get("id") or f"toolu_{uuid.uuid4().hex[:24]}", block.get("name", ""),
                                      arguments))
        finish = finish_of(calls, FINISH_REASONS.get(self.stop_reason, self.stop_reason))
        usage = Usage(self.prompt_tokens, self.completion_tokens, self.cached_tokens)
        return Completion("".join(text) or None, calls, finish, usage, model)


def _apply(assembly: MessageAssembly, events: list[str]) -> bool:
    """Feed one read's events; True at `message_stop` (whatever follows it is not read)."""
    for data in events:
        assembly.feed(event_json(data))
        if assembly.stopped:
            return True
    return False


def parse_message(data: dict, model: str) -> Completion:
    """A Completion from a non-streamed Messages response."""
    if not isinstance(data.get("content"), list):
        raise ProviderProtocolError("no content in the response")
    assembly = MessageAssembly(None)
    for index, block in enumerate(data["content"]):
        assembly.feed({"type": "content_block_start", "index": index, "content_block": block})
        if block.get("type") == "text":
            assembly.blocks[index]["pieces"].append(block.get("text", ""))
    usage = data.get("usage") or {}
    assembly.read_usage(usage)
    assembly.completion_tokens = int(usage.get("output_tokens") or 0)
    assembly.stop_reason = data.get("stop_reason")
    return assembly.result(model)


class AnthropicTransport:
    """Sends one Messages request; the same `send` contract as OpenAICompatTransport."""

    def __init__(self, http: httpx.Client, base_url: str, api_key: str | None, timeout: httpx.Timeout,
                 max_tokens: int) -> None:
        self.http = http
        self.url = messages_url(base_url)
        self.api_key = api_key
        self.timeout = timeout
        self.max_tokens = max_tokens

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "anthropic-version": API_VERSION}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return headers

    def send(self, model: str, messages: list[dict], tools: list[dict] | None, on_delta: OnDelta | None,
             cancelled: Callable[[], bool], stream: bool = True, max_tokens: int | None = None) -> Completion:
        """One attempt; raises ProviderHTTPError, ProviderProtocolError, httpx errors or Cancelled."""
        body = build_request(model, messages, tools, max_tokens or self.max_tokens, stream)
        if not stream:
            response = self.http.post(self.url, json=body, headers=self._headers(), timeout=self.timeout)
            raise_for_status(response)
            try:
                return parse_message(response.json(), model)
            except ValueError as exc:
                raise ProviderProtocolError(f"the body is not JSON ({exc})") from None
        request = self.http.build_request("POST", self.url, json=body, headers=self._headers(), timeout=self.timeout)
        response = self.http.send(request, stream=True)
        reads = events_by_read(response.iter_bytes())
        try:
            raise_for_status(response)
            completion = self._read_stream(reads, model, on_delta, cancelled)
        except BaseException:
            response.close()
            raise
        stream_end.release(response, reads)
        return completion

    def _read_stream(self, reads: Iterator[list[str]], model: str, on_delta: OnDelta | None,
                     cancelled: Callable[[], bool]) -> Completion:
        """The answer, each read's text passed to `on_delta` as one delta once its events are applied."""
        assembly = MessageAssembly(on_delta)
        assembly.read(reads, lambda events: _apply(assembly, events), cancelled)
        if cancelled():
            raise Cancelled()
        if not assembly.stopped:
            raise ProviderProtocolError("the stream ended before the answer was complete")
        return assembly.result(model)
