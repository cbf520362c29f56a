"""Provider quirks the scripted model does not produce: odd stream shapes, error events, header formats."""

from __future__ import annotations

import random
from datetime import datetime, timezone

import pytest

from shared.errors import ModelAuthError, ModelRequestError
from shared.llm.backoff import backoff_delay, parse_retry_after
from shared.llm.classify import ProviderHTTPError, classify, classify_status
from shared.llm.deltas import DeltaRelay
from shared.llm.openai_compat import StreamAssembly, sse_data

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py


def test_sse_parsing_skips_comments_and_joins_multiline_data():
    lines = [": OPENROUTER PROCESSING", "", "event: message", "data: {\"a\":", "data: 1}", "", "data: [DONE]", ""]

    assert list(sse_data(lines)) == ['{"a":\n1}', "[DONE]"]


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
