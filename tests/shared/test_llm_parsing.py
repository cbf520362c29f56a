"""Provider quirks the scripted model does not produce: odd stream shapes, error events, header formats."""

from __future__ import annotations

import json
import random
from datetime import datetime, timezone

import pytest

from shared.errors import ModelAuthError, ModelRequestError
from shared.llm.backoff import backoff_delay, parse_retry_after
from shared.llm.classify import ProviderHTTPError, classify, classify_status
from shared.llm.deltas import DeltaRelay
import httpx

from shared.llm.anthropic import AnthropicTransport
from shared.llm.openai_compat import OpenAICompatTransport, StreamAssembly
from shared.llm.sse import events_by_read

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py


def test_sse_parsing_skips_comments_and_joins_multiline_data():
    body = b': OPENROUTER PROCESSING\n\nevent: message\ndata: {"a":\ndata: 1}\n\ndata: [DONE]\n\n'

    assert list(events_by_read([body])) == [['{"a":\n1}', "[DONE]"]]


def test_sse_events_come_a_read_at_a_time_whatever_splits_the_bytes():
    """Events as each read completes them: CRLF, CR or LF line ends, a UTF-8 character cut between two reads, a CR
    at a read's end held until the next shows whether it was half of a CRLF (here it was a blank line of its own),
    `data:` without its space, a read that completes no event, an event the body ends without a blank line."""
    reads = [b"data: caf\xc3", b"\xa9\r", b"\n\r\ndata:two\rdata: lines\r\r", b": ping\n", b"data: a",
             b"\n\ndata: last"]

    assert list(events_by_read(reads)) == [[], [], ["café"], ["two\nlines"], [], ["a"], ["last"]]


def test_a_line_separator_inside_json_text_does_not_split_the_event():
    body = '{"choices": [{"delta": {"content": "one\u2028two\u0085three"}}]}'.encode()

    assert list(events_by_read([b"data: " + body + b"\n\n"])) == [[body.decode()]]


def _transport(kind: str, chunks: list[bytes]):
    """A transport whose server sends `chunks` as the reads of one streamed answer."""
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=iter(chunks))

    http = httpx.Client(transport=httpx.MockTransport(handler))
    timeout = httpx.Timeout(5.0)
    if kind == "openai":
        return OpenAICompatTransport(http, "http://model.test/v1", None, timeout)
    return AnthropicTransport(http, "http://model.test", None, timeout, max_tokens=100)


def _openai_chunk(text: str) -> bytes:
    """As servers send it: UTF-8 as is, not escaped."""
    return b"data: " + json.dumps({"choices": [{"delta": {"content": text}}]}, ensure_ascii=False).encode() + b"\n\n"


def _anthropic_event(event: dict) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n".encode()


OPENAI_END = (b'data: {"choices": [{"delta": {}, "finish_reason": "stop"}]}\n\n'
              b'data: {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 3}}\n\ndata: [DONE]\n\n')
ANTHROPIC_START = (_anthropic_event({"type": "message_start", "message": {"usage": {"input_tokens": 3}}})
                   + _anthropic_event({"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": ""}}))
ANTHROPIC_END = (_anthropic_event({"type": "content_block_stop", "index": 0})
                 + _anthropic_event({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                     "usage": {"output_tokens": 3}})
                 + _anthropic_event({"type": "message_stop"}))


def _anthropic_text(text: str) -> bytes:
    return _anthropic_event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})


@pytest.mark.parametrize("kind, start, piece, end", [
    ("openai", b"", _openai_chunk, OPENAI_END), ("anthropic", ANTHROPIC_START, _anthropic_text, ANTHROPIC_END)])
def test_what_arrives_in_one_read_is_one_delta(kind, start, piece, end):
    """A worker that reads late finds several events waiting: their text goes on as one delta, not one per event;
    events read apart stay apart. The deltas add up to the answer either way."""
    reads = [start + piece("The ") + piece("quick ") + piece("brown "), piece("fox"), end]
    deltas: list[str] = []

    completion = _transport(kind, reads).send("m", [{"role": "user", "content": "hi"}], None, deltas.append,
                                              lambda: False)

    assert deltas == ["The quick brown ", "fox"]
    assert completion.content == "The quick brown fox"
    assert completion.finish_reason == "stop"


def test_tool_calls_without_index_are_told_apart_by_id():
    assembly = StreamAssembly(None)
    for part in ({"id": "a", "function": {"name": "one", "arguments": "{\"x\":"}},
                 {"function": {"arguments": " 1}"}},
                 {"id": "b", "function": {"name": "two", "arguments": {"y": 2}}}):
        assembly.feed({"choices": [{"delta": {"tool_calls": [part]}}]})
    assembly.feed({"choices": [{"delta": {}, "finish_reason": "stop"}]})

    completion = assembly.result("m", [])

    assert [(c.id, c.name, c.arguments) for c in completion.tool_calls] == [
        ("a", "one", '{"x": 1}'), ("b", "two", '{"y": 2}')]
    assert completion.finish_reason == "tool_calls"


def test_an_error_event_inside_a_stream_is_a_retryable_provider_error():
    assembly = StreamAssembly(None)

    with pytest.raises(ProviderHTTPError) as caught:
        assembly.feed({"error": {"code": 502, "message": "upstream died"}})

    assert classify(caught.value).retryable and "upstream died" in classify(caught.value).summary


def test_usage_is_estimated_when_the_provider_sends_none():
    assembly = StreamAssembly(None)
    assembly.feed({"choices": [{"delta": {"content": "12345678"}, "finish_reason": "stop"}]})

    usage = assembly.result("m", [{"role": "user", "content": "abcd" * 5}]).usage

    assert (usage.prompt_tokens, usage.completion_tokens) == (5, 2)


@pytest.mark.parametrize("status, outcome", [
    (401, ModelAuthError), (403, ModelAuthError), (400, ModelRequestError), (404, ModelRequestError),
    (422, ModelRequestError), (408, "retry"), (409, "retry"), (425, "retry"), (429, "retry"), (500, "retry"),
    (503, "retry"), (529, "retry"),
])
def test_statuses_are_sorted_into_retry_or_error(status, outcome):
    verdict = classify_status(status, "msg")

    if outcome == "retry":
        assert verdict.retryable and verdict.error is None
    else:
        assert not verdict.retryable and isinstance(verdict.error, outcome)


def test_retry_after_reads_seconds_and_http_dates():
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=timezone.utc)

    assert parse_retry_after("12") == 12
    assert parse_retry_after("Wed, 01 Jan 2025 12:00:30 GMT", now=now) == 30
    assert parse_retry_after("Wed, 01 Jan 2025 11:00:00 GMT", now=now) == 0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_backoff_doubles_up_to_the_cap_with_at_most_half_again_of_jitter():
    rng = random.Random(7)

    delays = [backoff_delay(attempt, 2, 10, rng) for attempt in range(1, 6)]

    for delay, floor in zip(delays, (2, 4, 8, 10, 10)):
        assert floor <= delay <= floor * 1.5


def test_a_retry_that_says_something_else_still_adds_up_to_the_answers_length():
    shown: list[str] = []
    relay = DeltaRelay(shown.append)
    for piece in ("Hello ", "wor"):
        relay.push(piece)
    relay.new_attempt()
    for piece in ("Goodbye ", "world"):
        relay.push(piece)

    assert shown == ["Hello ", "wor", "orld"]
    assert len("".join(shown)) == len("Goodbye world")


@pytest.mark.parametrize("kind, start, piece, end", [
    ("openai", b"", _openai_chunk, OPENAI_END), ("anthropic", ANTHROPIC_START, _anthropic_text, ANTHROPIC_END)])
def test_text_holding_a_unicode_line_separator_streams_intact(kind, start, piece, end):
    """U+2028, U+2029 and U+0085 may stand unescaped in JSON text; they do not end an SSE line. httpx's
    iter_lines split the event there, and the answer failed as an unreadable stream event."""
    answer = "one\u2028two\u2029three\u0085four"

    completion = _transport(kind, [start + piece(answer) + end]).send("m", [{"role": "user", "content": "hi"}], None,
                                                                      None, lambda: False)

    assert completion.content == answer
