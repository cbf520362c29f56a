"""The LLM client against the scripted model over real HTTP: streaming, tool calls, retries, fallback."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from email.utils import formatdate

import httpx
import pytest
import redis

from shared.config import load_settings
from shared.errors import ContextOverflow, ModelAuthError, ModelRequestError, ModelUnavailable
from shared.llm import Cancelled, Completion, LLMClient, get_llm
from shared.llm import stream_end
from shared.llm.client import KEEPALIVE_CONNECTIONS, pooled_http_client, shared_http_client
from shared.http.nodelay import NoDelayClient
from tests.fakes.model import Reply, fail, text, tool_call
from tests.support.env import free_port
from tests.support.waiting import wait_until

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

HELLO = [{"role": "user", "content": "hello there"}]


def make_client(sleeps: list[float] | None = None, **overrides) -> LLMClient:
    """A client on the test settings; with `sleeps`, backoff waits are recorded instead of slept."""
    settings = load_settings(**overrides)
    if sleeps is None:
        return LLMClient(settings)
    return LLMClient(settings, sleep=lambda seconds, cancelled: sleeps.append(seconds))


def models_asked(model) -> list[str]:
    return [r.body["model"] for r in model.requests]


def test_streamed_text_arrives_as_deltas_in_order(model):
    # chunks written apart are read apart (what arrives together is one delta: test_llm_parsing)
    model.script(text("The quick brown fox jumps over the lazy dog.", chunk_delay=0.02))
    deltas: list[str] = []

    completion = make_client().complete(HELLO, on_delta=deltas.append)

    assert len(deltas) > 3
    assert "".join(deltas) == completion.content == "The quick brown fox jumps over the lazy dog."
    assert completion.finish_reason == "stop"
    assert completion.tool_calls == []
    assert completion.model == "scripted"
    assert completion.usage.prompt_tokens > 0 and completion.usage.completion_tokens > 0
    assert model.requests[0].body["stream"] is True


def test_cached_prompt_tokens_are_read_from_the_usage_streamed_or_not(model):
    client = make_client()
    cold = client.complete(HELLO, stream=False).usage
    warm = client.complete([*HELLO, {"role": "assistant", "content": "hi"}, {"role": "user", "content": "more"}]).usage

    assert cold.cached_tokens == 0
    assert 0 < warm.cached_tokens < warm.prompt_tokens


def test_unscripted_model_echoes_the_latest_user_message(model):
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "first"},
                {"role": "assistant", "content": "ok"}, {"role": "user", "content": "second"}]

    assert make_client().complete(messages).content == "You said: second"


def test_streamed_tool_calls_are_assembled_by_index(model):
    model.script(tool_call([("read_file", {"path": "notes/a long file name.txt", "offset": 10}),
                            ("list_files", "{bad json")], text="Let me look."))
    deltas: list[str] = []

    completion = make_client().complete(HELLO, tools=[], on_delta=deltas.append)

    assert [c.name for c in completion.tool_calls] == ["read_file", "list_files"]
    assert json.loads(completion.tool_calls[0].arguments) == {"path": "notes/a long file name.txt", "offset": 10}
    assert completion.tool_calls[1].arguments == "{bad json"
    assert all(c.id.startswith("call_") for c in completion.tool_calls)
    assert completion.tool_calls[0].id != completion.tool_calls[1].id
    assert completion.finish_reason == "tool_calls"
    assert completion.content == "".join(deltas) == "Let me look."
    message = completion.to_message()
    assert message["tool_calls"][1]["function"] == {"name": "list_files", "arguments": "{bad json"}


def test_tools_are_sent_with_the_request(model):
    tools = [{"type": "function", "function": {"name": "list_files", "parameters": {"type": "object"}}}]

    make_client().complete(HELLO, tools=tools)

    assert model.requests[0].body["tools"] == tools
    assert model.requests[0].body["messages"] == HELLO


def test_non_streamed_call_returns_text_and_tool_calls(model):
    model.script(text("plain answer", usage={"prompt_tokens": 11, "completion_tokens": 3}),
                 tool_call([("list_files", {"path": "."})]))
    client = make_client()

    first = client.complete(HELLO, stream=False)
    second = client.complete(HELLO, stream=False)

    assert (first.content, first.finish_reason) == ("plain answer", "stop")
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (11, 3)
    assert second.content is None
    assert [(c.name, json.loads(c.arguments)) for c in second.tool_calls] == [("list_files", {"path": "."})]
    assert [r.body["stream"] for r in model.requests] == [False, False]


def test_api_key_is_sent_as_a_bearer_header(model):
    make_client().complete(HELLO)

    assert model.requests[0].headers["authorization"] == "Bearer sk-test-fake-model-key"


def test_rate_limit_waits_as_long_as_retry_after_says(model):
    model.script(fail(429, "slow down", retry_after=7), text("finally"))
    sleeps: list[float] = []

    completion = make_client(sleeps).complete(HELLO)

    assert completion.content == "finally"
    assert sleeps == [7]
    assert len(model.requests) == 2


def test_retry_after_as_an_http_date_is_honoured(model):
    model.script(fail(503, "maintenance", retry_after=formatdate(time.time() + 30, usegmt=True)), text("back"))
    sleeps: list[float] = []

    assert make_client(sleeps).complete(HELLO).content == "back"
    assert len(sleeps) == 1 and 20 < sleeps[0] <= 30


def test_retry_after_is_capped(model):
    model.script(fail(429, retry_after=3600), text("ok"))
    sleeps: list[float] = []

    make_client(sleeps, LLM_RETRY_AFTER_CAP_SECONDS="5").complete(HELLO)

    assert sleeps == [5]


def test_backoff_without_retry_after_grows_with_jitter(model):
    model.script(fail(500), fail(502), fail(500), text("ok"))
    sleeps: list[float] = []

    make_client(sleeps, LLM_BACKOFF_BASE_SECONDS="1", LLM_BACKOFF_MAX_SECONDS="3").complete(HELLO)

    assert len(sleeps) == 3
    for delay, base in zip(sleeps, (1, 2, 3)):
        assert base <= delay <= base * 1.5


def test_real_backoff_then_success(model):
    model.script(fail(429, "busy", retry_after=0), fail(500), text("made it"))

    assert make_client().complete(HELLO).content == "made it"
    assert len(model.requests) == 3


def test_persistent_server_errors_switch_to_the_fallback_model(model):
    model.script(*[fail(500, "boom")] * 3, text("from the backup"))

    completion = make_client(LLM_MAX_RETRIES="2", LLM_FALLBACK_MODEL="backup").complete(HELLO)

    assert completion.content == "from the backup"
    assert completion.model == "backup"
    assert models_asked(model) == ["scripted"] * 3 + ["backup"]


def test_fallback_failing_too_raises_model_unavailable(model):
    model.script(*[fail(500, "still broken")] * 4)

    with pytest.raises(ModelUnavailable) as caught:
        make_client(LLM_MAX_RETRIES="1", LLM_FALLBACK_MODEL="backup").complete(HELLO)

    assert caught.value.code == "model_unavailable"
    assert "kept failing" in caught.value.message and "still broken" in caught.value.message
    assert models_asked(model) == ["scripted", "scripted", "backup", "backup"]


def test_without_fallback_exhausted_retries_raise_model_unavailable(model):
    model.script(*[fail(503, "overloaded")] * 3)

    with pytest.raises(ModelUnavailable):
        make_client(LLM_MAX_RETRIES="2", LLM_FALLBACK_MODEL="").complete(HELLO)

    assert len(model.requests) == 3


def test_bad_key_fails_at_once_without_fallback(model):
    model.script(fail(401, "Incorrect API key provided"), text("never"))

    with pytest.raises(ModelAuthError) as caught:
        make_client(LLM_FALLBACK_MODEL="backup").complete(HELLO)

    assert caught.value.code == "model_auth_failed"
    assert "LLM_API_KEY" in caught.value.message and "401" in caught.value.message
    assert len(model.requests) == 1


def test_refused_request_raises_model_request_error_with_the_providers_message(model):
    model.script(fail(400, "unknown parameter 'frobnicate'"))

    with pytest.raises(ModelRequestError) as caught:
        make_client(LLM_FALLBACK_MODEL="").complete(HELLO)

    assert caught.value.code == "model_bad_request"
    assert "unknown parameter 'frobnicate'" in caught.value.message
    assert len(model.requests) == 1


@pytest.mark.parametrize("status, message", [
    (400, "This model's maximum context length is 128000 tokens. However, your messages resulted in 130001 tokens."),
    (400, "prompt is too long: 210000 tokens > 200000 maximum"),
    (413, "Request too large: too many tokens"),
])
def test_a_context_overflow_is_its_own_error_and_skips_the_fallback(model, status, message):
    """The caller compresses and asks again; a fallback model would not see less."""
    model.script(fail(status, message))

    with pytest.raises(ContextOverflow) as caught:
        make_client(LLM_FALLBACK_MODEL="backup").complete(HELLO)

    assert caught.value.code == "context_overflow"
    assert len(model.requests) == 1


def test_an_answer_cut_by_the_output_limit_is_continued_and_joined(model):
    """Finish_reason=length was returned as if whole. Now up to 3 continuations with a raised cap."""
    model.script(text("The first half, ", finish_reason="length"), text("the second half, ", finish_reason="length"),
                 text("and the end."))
    streamed = []

    answer = make_client(LLM_MAX_TOKENS="1000").complete(HELLO, on_delta=streamed.append)

    assert answer.content == "The first half, the second half, and the end." == "".join(streamed)
    assert answer.finish_reason == "stop"
    first, second, third = [r.body for r in model.requests]
    assert "max_tokens" not in first and (second["max_tokens"], third["max_tokens"]) == (2000, 4000)
    assert third["messages"][-2] == {"role": "assistant", "content": "The first half, the second half, "}
    assert "truncated by the output length limit" in third["messages"][-1]["content"]


def test_an_answer_still_cut_after_three_continuations_says_so(model):
    model.script(*[text(f"part{i} ", finish_reason="length") for i in range(4)])

    answer = make_client().complete(HELLO)

    assert len(model.requests) == 4
    assert answer.content.startswith("part0 part1 part2 part3 ") and "cut by the model's output limit" in answer.content


def test_a_cut_tool_call_is_asked_again_and_never_returned_half_formed(model):
    model.script(tool_call([("read_file", {"path": "notes.txt"})], finish_reason="length"),
                 tool_call([("read_file", {"path": "notes.txt"})]))

    answer = make_client().complete(HELLO, tools=[{"type": "function", "function": {"name": "read_file"}}])

    first, second = [r.body for r in model.requests]
    assert second["messages"] == first["messages"] and second["max_tokens"] > 0
    assert [c.name for c in answer.tool_calls] == ["read_file"] and answer.finish_reason == "tool_calls"


def test_a_tool_call_cut_every_time_is_not_run(model):
    model.script(*[tool_call([("read_file", {"path": "x"})], finish_reason="length") for _ in range(4)])

    answer = make_client().complete(HELLO, tools=[{"type": "function", "function": {"name": "read_file"}}])

    assert answer.tool_calls == [] and "tool call was not run" in answer.content


def test_refused_request_tries_the_fallback_once(model):
    model.script(fail(404, "no such model"), text("the backup knows"))

    completion = make_client(LLM_FALLBACK_MODEL="backup").complete(HELLO)

    assert completion.model == "backup"
    assert models_asked(model) == ["scripted", "backup"]


def test_slow_answer_times_out_and_is_retried(model):
    model.script(text("too late", latency=5), text("on time"))

    completion = make_client(LLM_TIMEOUT_SECONDS="0.5").complete(HELLO)

    assert completion.content == "on time"
    assert len(model.requests) == 2


def test_dropped_stream_is_retried_without_repeating_shown_text(model):
    model.script(text("alpha beta gamma delta", drop_after=3, chunk_delay=0.02), text("alpha beta gamma delta"))
    deltas: list[str] = []

    completion = make_client().complete(HELLO, on_delta=deltas.append)

    assert deltas[:2] == ["alpha ", "beta "]
    assert "".join(deltas) == completion.content == "alpha beta gamma delta"
    assert len(model.requests) == 2


def test_dropped_connection_without_an_answer_is_retried(model):
    model.script(text("lost", drop_after=0), text("kept"))

    assert make_client().complete(HELLO, stream=False).content == "kept"
    assert len(model.requests) == 2


def test_unreachable_provider_is_retried_then_unavailable(model):
    client = make_client(LLM_BASE_URL=f"http://127.0.0.1:{free_port()}/v1", LLM_MAX_RETRIES="1",
                         LLM_FALLBACK_MODEL="")

    with pytest.raises(ModelUnavailable) as caught:
        client.complete(HELLO)

    assert "connection failed" in caught.value.message


def test_cancel_mid_stream_stops_the_call(model):
    model.script(text(" ".join(f"word{i}" for i in range(40)), chunk_delay=0.01))
    deltas: list[str] = []

    with pytest.raises(Cancelled):
        make_client().complete(HELLO, on_delta=deltas.append, cancelled=lambda: len(deltas) >= 3)

    assert 3 <= len(deltas) < 40


def test_cancel_before_the_call_sends_nothing(model):
    with pytest.raises(Cancelled):
        make_client().complete(HELLO, cancelled=lambda: True)

    assert model.requests == []


@pytest.mark.timeout(30)
def test_cancel_wakes_a_long_backoff(model):
    model.script(fail(429, retry_after=600))

    with pytest.raises(Cancelled):
        make_client().complete(HELLO, cancelled=lambda: len(model.requests) >= 1)

    assert len(model.requests) == 1


def test_dynamic_replies_see_the_request(model):
    model.script(lambda body: text(f"{len(body['messages'])} messages"))

    assert make_client().complete(HELLO * 3).content == "3 messages"


def test_unconfigured_provider_is_unavailable(model):
    with pytest.raises(ModelUnavailable) as caught:
        make_client(LLM_BASE_URL="").complete(HELLO)

    assert "LLM_BASE_URL" in caught.value.message


def test_get_llm_caches_one_client_per_settings():
    settings = load_settings()

    assert get_llm(settings) is get_llm(settings)
    assert get_llm(settings) is not get_llm(load_settings(LLM_MODEL="other"))


def test_calls_are_counted_in_metrics_when_redis_is_given(model, redis_client):
    # A Redis database of its own: workers of other tests record into the shared one at any time.
    kwargs = redis_client.connection_pool.connection_kwargs
    private = redis.Redis(host=kwargs.get("host", "127.0.0.1"), port=kwargs.get("port", 6379), db=12)
    private.delete("metrics:hstack_model_calls_total")

    def count(outcome: str) -> float:
        return float(private.hget("metrics:hstack_model_calls_total", f'outcome="{outcome}"') or 0)

    before = {o: count(o) for o in ("ok", "retry", "error")}
    model.script(fail(500), text("ok"), fail(401))
    client = LLMClient(load_settings(), redis=private)

    client.complete(HELLO)
    with pytest.raises(ModelAuthError):
        client.complete(HELLO)

    assert {o: count(o) - before[o] for o in before} == {"ok": 1, "retry": 1, "error": 1}


def test_prompt_and_cached_tokens_are_counted_by_kind(model, redis_client):
    kind = f"review-{uuid.uuid4().hex[:8]}"  # a label of its own: other tests record into the same Redis
    field = f'kind="{kind}"'
    client = LLMClient(load_settings(), redis=redis_client)
    try:
        first = client.complete(HELLO, kind=kind).usage
        second = client.complete([*HELLO, {"role": "assistant", "content": "hi"}, {"role": "user", "content": "more"}],
                                 kind=kind).usage
        client.complete(HELLO)  # no kind: not counted

        counted = [float(redis_client.hget(f"metrics:{name}", field) or 0)
                   for name in ("hstack_prompt_tokens_total", "hstack_cached_prompt_tokens_total")]
        assert counted == [first.prompt_tokens + second.prompt_tokens, second.cached_tokens]
        assert second.cached_tokens > 0
    finally:
        for name in ("hstack_prompt_tokens_total", "hstack_cached_prompt_tokens_total"):
            redis_client.hdel(f"metrics:{name}", field)


def test_fifty_concurrent_calls_all_succeed(model):
    model.latency = 0.5
    together = threading.Barrier(50, timeout=20)

    def answer(body: dict) -> Reply:
        together.wait()
        return text(f"answer to {body['messages'][0]['content']}")

    model.script(*[answer] * 50)
    client = get_llm(load_settings())
    with ThreadPoolExecutor(max_workers=50) as pool:
        results: list[Completion] = list(pool.map(
            lambda i: client.complete([{"role": "user", "content": f"q{i}"}]), range(50)))

    assert sorted(c.content for c in results) == sorted(f"answer to q{i}" for i in range(50))
    assert not together.broken


def idle_connections(http: httpx.Client) -> int:
    """Connections of this client's pool that are open and free for the next request."""
    return sum(1 for connection in http._transport._pool.connections if connection.is_idle())


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_streamed_answer_leaves_its_connection_to_the_next_call(model, provider):
    """Reading stops at the answer's last event; the body's end is read after, so the connection is reused."""
    with httpx.Client() as http:
        client = LLMClient(load_settings(LLM_PROVIDER=provider), http=http)
        first = client.complete(HELLO)
        wait_until(lambda: idle_connections(http), what="the first call's connection back in the pool")
        second = client.complete(HELLO)

    assert first.content == second.content == "You said: hello there"
    assert len(model.requests) == 2
    assert model.requests[0].peer == model.requests[1].peer  # one connection, one handshake


def test_a_burst_of_calls_keeps_only_a_few_connections_for_later(model):
    """httpcore's pool costs CPU per idle connection on every request: a burst must not leave hundreds behind."""
    calls = KEEPALIVE_CONNECTIONS + 12
    together = threading.Barrier(calls, timeout=20)

    def answer(body: dict) -> Reply:
        together.wait()  # every call holds its own connection at once
        return text("done")

    model.script(*[answer] * calls)
    with pooled_http_client() as http:
        client = LLMClient(load_settings(), http=http)
        with ThreadPoolExecutor(max_workers=calls) as pool:
            assert [c.content for c in pool.map(lambda i: client.complete(HELLO), range(calls))] == ["done"] * calls
        wait_until(lambda: all(c.is_idle() or c.is_closed() for c in http._transport._pool.connections),
                   what="every answer's end read")

        assert len({r.peer for r in model.requests}) == calls
        assert 0 < idle_connections(http) <= KEEPALIVE_CONNECTIONS


def test_model_connections_send_each_write_at_once_and_keep_environment_proxies(model, monkeypatch):
    """TCP_NODELAY on the model client's sockets (a kept-alive request is not held for the server's ACK)."""
    http = shared_http_client()
    LLMClient(load_settings(), http=http).complete(HELLO)
    connection = wait_until(lambda: next((c for c in http._transport._pool.connections if c.is_idle()), None),
                            what="an idle connection")
    sock = connection._connection._network_stream.get_extra_info("socket")
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)

    monkeypatch.setenv("HTTP_PROXY", f"http://{model.host}:{model.port}")
    with NoDelayClient() as proxied:
        proxied.get("http://models.example.invalid/v1/models")
    assert model.requests[-1].path == "http://models.example.invalid/v1/models"  # asked of the proxy, absolute


class _Response:
    closed = False

    def close(self) -> None:
        self.closed = True


def test_a_server_that_keeps_talking_after_the_answer_only_loses_its_connection(caplog, monkeypatch):
    """Past TRAILING_LINES after the last event (or a broken end), the response is closed and the log says why, once."""
    monkeypatch.setattr(stream_end, "_warned", threading.Event())
    endless, broken = _Response(), _Response()

    def breaks():
        yield ""
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    with caplog.at_level("WARNING", logger="shared.llm.stream_end"):
        assert stream_end.release(endless, iter(lambda: ": keep-alive", None)).wait(10)
        assert stream_end.release(broken, breaks()).wait(10)
        finished = _Response()
        assert stream_end.release(finished, iter(["", ""])).wait(10)

    assert endless.closed and broken.closed and finished.closed
    assert [r.getMessage() for r in caplog.records].count(
        "the model server did not end its response after the answer's last event: its connections "
        "are closed after each call instead of being reused") == 1
