"""The Anthropic Messages transport against the scripted model's /v1/messages, over real HTTP."""

from __future__ import annotations

import json

import httpx
import pytest

from shared.config import load_settings
from shared.errors import ModelAuthError
from shared.llm import LLMClient
from shared.llm.anthropic import AnthropicTransport
from shared.llm.client import make_transport
from shared.llm.openai_compat import OpenAICompatTransport
from tests.fakes.model import fail, text, tool_call

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

HISTORY = [
    {"role": "system", "content": "You are Hermes."},
    {"role": "user", "content": "read a.txt"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "name": "read_file", "content": "hello from a.txt"},
    {"role": "user", "content": "and now summarise it"},
]
TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                           "parameters": {"type": "object", "properties": {"path": {}}}}}]


def anthropic_client(sleeps: list[float] | None = None, **overrides) -> LLMClient:
    settings = load_settings(LLM_PROVIDER="anthropic", LLM_MAX_TOKENS="1234", **overrides)
    if sleeps is None:
        return LLMClient(settings)
    return LLMClient(settings, sleep=lambda seconds, cancelled: sleeps.append(seconds))


def test_streamed_answer_arrives_as_deltas(model):
    model.script(text("Claude-shaped answer, streamed.", chunk_delay=0.02))  # chunks written apart are read apart
    deltas: list[str] = []

    completion = anthropic_client().complete(HISTORY, tools=TOOLS, on_delta=deltas.append)

    assert "".join(deltas) == completion.content == "Claude-shaped answer, streamed."
    assert len(deltas) > 1
    assert completion.finish_reason == "stop"
    assert completion.usage.prompt_tokens > 0 and completion.usage.completion_tokens > 0


def test_request_uses_anthropic_headers_format_and_cache_markers(model):
    anthropic_client().complete(HISTORY, tools=TOOLS)

    request = model.requests[0]
    body = request.body
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-test-fake-model-key"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert body["max_tokens"] == 1234 and body["stream"] is True
    assert body["system"] == [{"type": "text", "text": "You are Hermes.", "cache_control": {"type": "ephemeral"}}]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    tool_use = body["messages"][1]["content"][0]
    assert (tool_use["type"], tool_use["id"], tool_use["input"]) == ("tool_use", "call_1", {"path": "a.txt"})
    result, question = body["messages"][2]["content"]
    assert (result["type"], result["tool_use_id"], result["content"]) == ("tool_result", "call_1", "hello from a.txt")
    assert question["text"] == "and now summarise it"
    marked = [m["content"][-1].get("cache_control") for m in body["messages"]]
    assert marked == [{"type": "ephemeral"}] * 3
    assert body["tools"] == [{"name": "read_file", "description": "Read a file.",
                              "input_schema": {"type": "object", "properties": {"path": {}}}}]


def test_cache_reads_are_counted_as_cached_prompt_tokens(model):
    """The markers move to the newest messages each call; the provider's cache still holds the shared prefix."""
    client = anthropic_client()
    cold = client.complete(HISTORY, tools=TOOLS, stream=False).usage
    warm = client.complete([*HISTORY, {"role": "assistant", "content": "Done."},
                            {"role": "user", "content": "thanks"}], tools=TOOLS).usage

    assert cold.cached_tokens == 0 and cold.prompt_tokens > 0
    assert cold.prompt_tokens - 10 < warm.cached_tokens < warm.prompt_tokens


def test_only_the_last_three_messages_carry_cache_markers(model):
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(7)]

    anthropic_client().complete(history)

    marks = [bool(m["content"][-1].get("cache_control")) for m in model.requests[0].body["messages"]]
    assert marks == [False] * 4 + [True] * 3
    assert history[-1] == {"role": "user", "content": "m6"}


def test_streamed_tool_calls_are_assembled(model):
    model.script(tool_call([("read_file", {"path": "a.txt"}), ("list_files", {"path": "."})], text="Looking."))

    completion = anthropic_client().complete(HISTORY, tools=TOOLS)

    assert completion.content == "Looking."
    assert [(c.name, json.loads(c.arguments)) for c in completion.tool_calls] == [
        ("read_file", {"path": "a.txt"}), ("list_files", {"path": "."})]
    assert completion.finish_reason == "tool_calls"


def test_non_streamed_answer(model):
    model.script(tool_call([("list_files", {"path": "."})], text="One moment."))

    completion = anthropic_client().complete(HISTORY, stream=False)

    assert completion.content == "One moment."
    assert [(c.name, json.loads(c.arguments)) for c in completion.tool_calls] == [("list_files", {"path": "."})]
    assert model.requests[0].body["stream"] is False


def test_overloaded_is_retried_and_a_bad_key_is_not(model):
    model.script(fail(529, "Overloaded", retry_after=1), text("recovered"), fail(401, "invalid x-api-key"))
    sleeps: list[float] = []
    client = anthropic_client(sleeps)

    assert client.complete(HISTORY).content == "recovered"
    assert sleeps == [1]
    with pytest.raises(ModelAuthError):
        client.complete(HISTORY)
    assert len(model.requests) == 3


def test_dropped_stream_is_retried(model):
    model.script(text("partial answer here", drop_after=4), text("partial answer here"))
    deltas: list[str] = []

    completion = anthropic_client().complete(HISTORY, on_delta=deltas.append)

    assert "".join(deltas) == completion.content == "partial answer here"
    assert len(model.requests) == 2


@pytest.mark.parametrize("base_url, provider, expected", [
    ("https://api.anthropic.com", "auto", AnthropicTransport),
    ("https://api.anthropic.com/v1", "openai", OpenAICompatTransport),
    ("https://openrouter.ai/api/v1", "auto", OpenAICompatTransport),
    ("http://127.0.0.1:9/v1", "anthropic", AnthropicTransport),
])
def test_provider_is_chosen_from_setting_or_host(base_url, provider, expected):
    settings = load_settings(LLM_BASE_URL=base_url, LLM_PROVIDER=provider)
    with httpx.Client() as http:
        transport = make_transport(settings, http, None, httpx.Timeout(1))

    assert isinstance(transport, expected)


def test_anthropic_url_gets_the_messages_path():
    settings = load_settings(LLM_BASE_URL="https://api.anthropic.com")
    with httpx.Client() as http:
        assert make_transport(settings, http, None, httpx.Timeout(1)).url == "https://api.anthropic.com/v1/messages"


def test_unknown_provider_is_refused():
    with pytest.raises(ValueError):
        LLMClient(load_settings(LLM_PROVIDER="bedrock"))
