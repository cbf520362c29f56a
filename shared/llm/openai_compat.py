"""OpenAI-compatible chat completions over httpx: one attempt, streamed or not."""

from __future__ import annotations

import json
import math
import uuid
from typing import Callable, Iterator

import httpx

from shared.llm import stream_end
from shared.llm.backoff import parse_retry_after
from shared.llm.classify import SUMMARY_CHARS, ProviderHTTPError, ProviderProtocolError
from shared.llm.sse import Shown, event_json, events_by_read
from shared.llm.types import Cancelled, Completion, ToolCall, Usage
from shared.llm.wire import encode_body

OnDelta = Callable[[str], None]


def error_message(response: httpx.Response) -> str:
    """The provider's own words from an error response (OpenAI shape or whatever it sent)."""
    try:
        data = response.json()
    except ValueError:
        return response.text.strip()[:SUMMARY_CHARS] or response.reason_phrase
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    if isinstance(data, dict) and data.get("message"):
        return str(data["message"])
    return str(data)[:SUMMARY_CHARS]


def retry_after_of(response: httpx.Response) -> float | None:
    """Seconds the provider asked us to wait (`retry-after-ms` or `Retry-After`)."""
    millis = response.headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    return parse_retry_after(response.headers.get("retry-after"))


def raise_for_status(response: httpx.Response) -> None:
    """Turn an error status into ProviderHTTPError (reading the body first when streamed)."""
    if response.status_code < 300:
        return
    response.read()
    raise ProviderHTTPError(response.status_code, error_message(response), retry_after_of(response))


def _text_chars(messages: list[dict]) -> int:
    total = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(len(part.get("text", "")) for part in content if isinstance(part, dict))
        total += sum(len((c.get("function") or {}).get("arguments") or "") for c in message.get("tool_calls") or [])
    return total


def make_usage(raw: dict | None, messages: list[dict], content: str | None, calls: list[ToolCall]) -> Usage:
    """The provider's usage numbers (cached prompt tokens included), or a chars/4 estimate when it sent none."""
    if raw:
        details = raw.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else 0
        return Usage(int(raw.get("prompt_tokens") or 0), int(raw.get("completion_tokens") or 0), int(cached or 0))
    produced = len(content or "") + sum(len(c.name) + len(c.arguments) for c in calls)
    return Usage(math.ceil(_text_chars(messages) / 4), math.ceil(produced / 4))


def _arguments(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


class StreamAssembly(Shown):
    """Builds one Completion from stream chunks: text deltas, tool calls by index, finish, usage."""

    def __init__(self, on_delta: OnDelta | None) -> None:
        super().__init__(on_delta)
        self.calls: dict[int, dict] = {}
        self.finish_reason: str | None = None
        self.usage: dict | None = None

    def feed(self, chunk: dict) -> None:
        """Apply one `chat.completion.chunk` (or a mid-stream error event)."""
        if chunk.get("error"):
            error = chunk["error"]
            code = error.get("code") if isinstance(error, dict) else None
            message = error.get("message", str(error)) if isinstance(error, dict) else str(error)
            raise ProviderHTTPError(code if isinstance(code, int) else 500, str(message))
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            piece = delta.get("content")
            if piece:
                self.text.append(piece)
            for part in delta.get("tool_calls") or []:
                self._add_call(part)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]

    def _slot_index(self, part: dict) -> int:
        if isinstance(part.get("index"), int):
            return part["index"]
        known = {slot["id"]: i for i, slot in self.calls.items()}
        if part.get("id") and part["id"] not in known:
            return len(self.calls)
        return known.get(part.get("id"), max(self.calls, default=0))

    def _add_call(self, part: dict) -> None:
        slot = self.calls.setdefault(self._slot_index(part), {"id": None, "name": "", "arguments": []})
        slot["id"] = slot["id"] or part.get("id")
        function = part.get("function") or {}
        slot["name"] = slot["name"] or function.get("name") or ""
        if function.get("arguments"):
            slot["arguments"].append(_arguments(function["arguments"]))

    def result(self, model: str, messages: list[dict]) -> Completion:
        calls = [
            ToolCall(slot["id"] or f"call_{uuid.uuid4().hex[:24]}", slot["name"], "".join(slot["arguments"]))
            for _, slot in sorted(self.calls.items())
        ]
        content = "".join(self.text) or None
        finish = finish_of(calls, self.finish_reason)
        return Completion(content, calls, finish, make_usage(self.usage, messages, content, calls), model)


def finish_of(calls: list[ToolCall], reason: str | None) -> str | None:
    """"tool_calls" when there are calls, unless the output limit cut them ("length": never run them)."""
    if calls and reason != "length":
        return "tool_calls"
    return reason


def parse_completion(data: dict, model: str, messages: list[dict]) -> Completion:
    """A Completion from a non-streamed `chat.completion` body."""
    try:
        choice = data["choices"][0]
        message = choice.get("message") or {}
    except (KeyError, IndexError, TypeError) as exc:
        raise ProviderProtocolError(f"no choices in the response ({exc!r})") from None
    calls = [
        ToolCall(c.get("id") or f"call_{uuid.uuid4().hex[:24]}", (c.get("function") or {}).get("name", ""),
                 _arguments((c.get("function") or {}).get("arguments") or ""))
        for c in message.get("tool_calls") or []
    ]
    content = message.get("content") or None
    finish = finish_of(calls, choice.get("finish_reason"))
    return Completion(content, calls, finish, make_usage(data.get("usage"), messages, content, calls), model)


class OpenAICompatTransport:
    """Sends one chat-completions request to an OpenAI-compatible server."""

    def __init__(self, http: httpx.Client, base_url: str, api_key: str | None, timeout: httpx.Timeout) -> None:
        self.http = http
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key = api_key
        self.timeout = timeout

    def _headers(self, stream: bool) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream" if stream else "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def send(self, model: str, messages: list[dict], tools: list[dict] | None, on_delta: OnDelta | None,
             cancelled: Callable[[], bool], stream: bool = True, max_tokens: int | None = None) -> Completion:
        """One attempt; raises ProviderHTTPError, ProviderProtocolError, httpx errors or Cancelled.

        `max_tokens` is sent only when given (a continuation's raised output cap); otherwise the server's own.
        """
        body: dict = {"model": model, "messages": messages, "stream": stream}
        if tools:
            body["tools"] = tools
        if max_tokens:
            body["max_tokens"] = max_tokens
        if not stream:
            response = self.http.post(self.url, content=encode_body(body), headers=self._headers(False),
                                      timeout=self.timeout)
            raise_for_status(response)
            try:
                return parse_completion(response.json(), model, messages)
            except ValueError as exc:
                raise ProviderProtocolError(f"the body is not JSON ({exc})") from None
        body["stream_options"] = {"include_usage": True}
        request = self.http.build_request("POST", self.url, content=encode_body(body), headers=self._headers(True),
                                          timeout=self.timeout)
        response = self.http.send(request, stream=True)
        reads = events_by_read(response.iter_bytes())
        try:
            raise_for_status(response)
            completion = self._read_stream(reads, model, messages, on_delta, cancelled)
        except BaseException:
            response.close()
            raise
        stream_end.release(response, reads)
        return completion

    def _read_stream(self, reads: Iterator[list[str]], model: str, messages: list[dict],
                     on_delta: OnDelta | None, cancelled: Callable[[], bool]) -> Completion:
        """The answer, each read's text passed to `on_delta` as one delta once its events are applied."""
        assembly = StreamAssembly(on_delta)
        finished = assembly.read(reads, lambda events: _apply(assembly, events), cancelled)
        if cancelled():
            raise Cancelled()
        if not finished and assembly.finish_reason is None:
            raise ProviderProtocolError("the stream ended before the answer was complete")
        return assembly.result(model, messages)


def _apply(assembly: StreamAssembly, events: list[str]) -> bool:
    """Feed one read's events; True at `[DONE]` (whatever follows it is not read)."""
    for data in events:
        if data.strip() == "[DONE]":
            return True
        assembly.feed(event_json(data))
    return False
