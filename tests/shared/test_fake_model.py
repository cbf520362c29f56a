"""The scripted model speaks the OpenAI wire format well enough for the official client, and scripts as documented."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest

from services.demo_model.prefix_cache import CHARS_PER_TOKEN, PrefixCache, serialize, tokens
from tests.fakes.demo import demo_reply, summarise_listing
from tests.fakes.model import FakeModel, Reply, fail, text, tool_call
from tests.support.env import free_port

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

ROOT = Path(__file__).resolve().parents[2]
LIST_FILES = [{"type": "function", "function": {"name": "list_files", "parameters": {"type": "object"}}}]


def ask(model, content: str, stream: bool = False, **extra) -> httpx.Response:
    body = {"model": "m", "messages": [{"role": "user", "content": content}], "stream": stream, **extra}
    return httpx.post(f"{model.base_url}/chat/completions", json=body, timeout=10)


def sse_events(response: httpx.Response) -> list:
    datas = [line[len("data: "):] for line in response.text.splitlines() if line.startswith("data: ")]
    assert datas[-1] == "[DONE]"
    return [json.loads(d) for d in datas[:-1]]


def test_official_openai_client_streams_text_and_tool_calls(model):
    model.script(text("Hello from the fake."),
                 tool_call([("read_file", {"path": "a.txt"}), ("list_files", {"path": "."})]))
    client = openai.OpenAI(base_url=model.base_url, api_key="sk-anything")

    chunks = list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                                 stream=True))
    answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "files?"}])

    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello from the fake."
    assert chunks[-1].choices[0].finish_reason == "stop"
    calls = answer.choices[0].message.tool_calls
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("read_file", {"path": "a.txt"}), ("list_files", {"path": "."})]
    assert answer.choices[0].finish_reason == "tool_calls"
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens
    assert [m.id for m in client.models.list()] == ["scripted"]


def test_streamed_tool_call_arguments_arrive_in_pieces_with_usage_last(model):
    model.script(tool_call([("write_file", {"path": "notes.txt", "content": "a fairly long body"})]))

    events = sse_events(ask(model, "write", stream=True, stream_options={"include_usage": True}))

    pieces = [tc["function"]["arguments"] for e in events for c in e["choices"]
              for tc in c["delta"].get("tool_calls", []) if tc["function"].get("arguments")]
    assert len(pieces) > 2
    assert json.loads("".join(pieces)) == {"path": "notes.txt", "content": "a fairly long body"}
    assert events[-1]["choices"] == [] and events[-1]["usage"]["completion_tokens"] > 0
    assert events[-2]["choices"][0]["finish_reason"] == "tool_calls"


def test_usage_is_streamed_only_when_asked(model):
    events = sse_events(ask(model, "hi", stream=True))

    assert all("usage" not in e for e in events)
    assert ask(model, "hi").json()["usage"]["prompt_tokens"] > 0


def test_the_prefix_cache_reports_what_an_earlier_request_already_sent(model):
    """Tools, then system, then messages: the longest prefix shared with any earlier request of the run is cached."""
    system = {"role": "system", "content": "You are Hermes. " * 50}
    first = {"model": "m", "messages": [system, {"role": "user", "content": "hello"}], "tools": LIST_FILES}
    longer = {**first, "messages": [*first["messages"], {"role": "assistant", "content": "hi"},
                                    {"role": "user", "content": "and again"}]}
    other_tools = {**longer, "tools": [{"type": "function", "function": {"name": "x", "parameters": {}}}]}

    def usage(body: dict, stream: bool = False) -> dict:
        extra = {"stream": True, "stream_options": {"include_usage": True}} if stream else {}
        response = httpx.post(f"{model.base_url}/chat/completions", json={**body, **extra}, timeout=10)
        return sse_events(response)[-1]["usage"] if stream else response.json()["usage"]

    cold, warm, changed = usage(first), usage(longer, stream=True), usage(other_tools)

    assert cold["prompt_tokens_details"]["cached_tokens"] == 0
    cached = warm["prompt_tokens_details"]["cached_tokens"]
    assert cold["prompt_tokens"] - 10 < cached < warm["prompt_tokens"]  # all of the first request, minus its end
    assert changed["prompt_tokens"] == pytest.approx(warm["prompt_tokens"], abs=20)
    assert changed["prompt_tokens_details"]["cached_tokens"] < 10  # the tools come first: nothing else could match
    model.reset()
    assert usage(first)["prompt_tokens_details"]["cached_tokens"] == 0  # a new run starts cold


def _reference_usage(bodies: list[dict], kept: int) -> list[tuple[int, int]]:
    """(prompt, cached) tokens of each body by brute force: the longest prefix of its serialization shared with
    any of the `kept` serializations before it."""
    texts, out = [], []
    for body in bodies:
        text = serialize(body)
        longest = 0
        for earlier in texts[-kept:]:
            n = 0
            for a, b in zip(text, earlier):
                if a != b:
                    break
                n += 1
            longest = max(longest, n)
        texts.append(text)
        out.append((tokens(len(text)), longest // CHARS_PER_TOKEN))
    return out


def _conversations(rng: random.Random) -> list[dict]:
    """Requests as clients send them: conversations growing turn by turn, reviews of them, edited and cut
    histories, changed tools, Anthropic's system field and moving cache markers, tool calls with arguments."""
    tools = [LIST_FILES, [{"type": "function", "function": {"name": "x", "parameters": {"type": "object",
                                                                                        "minimum": 1}}}]]
    sessions = [[{"role": "system", "content": f"You are Hermes {n}. " * rng.randint(1, 30)}] for n in range(3)]
    bodies = []
    for _ in range(120):
        history = rng.choice(sessions)
        kind = rng.random()
        if kind < 0.55:
            history.append({"role": "user", "content": f"question {rng.randint(0, 9)} " * rng.randint(1, 8)})
            if rng.random() < 0.3:
                history.append({"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"c{len(history)}", "type": "function",
                     "function": {"name": "list_files", "arguments": json.dumps({"depth": rng.randint(0, 2)})}}]})
                history.append({"role": "tool", "tool_call_id": f"c{len(history) - 1}", "content": "a.txt"})
            history.append({"role": "assistant", "content": "answer " * rng.randint(1, 5)})
            messages = list(history)
        elif kind < 0.7:
            messages = [*history, {"role": "user", "content": "Review the conversation above."}]
        elif kind < 0.8:
            messages = history[:rng.randint(1, len(history))]
        elif kind < 0.9:
            messages = [dict(m) for m in history]
            messages[rng.randrange(len(messages))]["content"] = "edited"
        else:
            system, *rest = history
            marked = [{**m, "content": [{"type": "text", "text": str(m.get("content")),
                                         **({"cache_control": {"type": "ephemeral"}} if i == len(rest) - 1 else {})}]}
                      for i, m in enumerate(rest)]
            bodies.append({"model": "m", "system": [{"type": "text", "text": system["content"],
                                                     "cache_control": {"type": "ephemeral"}}], "messages": marked})
            continue
        bodies.append({"model": "m", "messages": messages, "tools": rng.choice(tools)})
    return bodies


@pytest.mark.parametrize("seed, kept", [(1, 512), (2, 512), (3, 5), (4, 2)])
def test_the_prefix_cache_measures_what_a_brute_force_search_does(seed, kept):
    """However requests follow each other (a request extending a recent one is serialized from it), each one's
    cached tokens are those of its longest prefix shared with any kept earlier request, as a plain search finds."""
    bodies = _conversations(random.Random(seed))
    cache = PrefixCache(kept=kept)

    measured = [(u.prompt_tokens, u.cached_tokens) for u in (cache.measure(b) for b in bodies)]

    assert measured == _reference_usage(bodies, kept)
    assert any(cached for _, cached in measured)


def test_marker_rules_come_first_then_the_script_then_the_echo(model):
    model.script(text("from the script"))
    model.on("weather", text("sunny"))
    model.on("rain", text("wet"))

    answers = [ask(model, q).json()["choices"][0]["message"]["content"]
               for q in ("weather and rain?", "rain?", "weather?", "anything")]

    assert answers == ["sunny", "wet", "from the script", "You said: anything"]


def test_markers_match_only_the_latest_user_message(model):
    model.on("secret", text("found it"))
    body = {"model": "m", "messages": [{"role": "user", "content": "secret"}, {"role": "assistant", "content": "x"},
                                       {"role": "user", "content": "plain"}, {"role": "tool", "content": "secret"}]}

    answer = httpx.post(f"{model.base_url}/chat/completions", json=body).json()

    assert answer["choices"][0]["message"]["content"] == "You said: plain"


def test_a_marker_quoted_only_by_a_recalled_block_does_not_match(model):
    """A scheduled job's run recalled another job's prompt in its `<memory-context>`, and the other job's script
    answered it: a rule matches the user's own words, never the block the stack appends."""
    model.on("Remind the user to call mum.", text("Time to call mum!"))
    recalled = ("Morning briefing please.\n\n<memory-context>\n[System note: recalled.]\n\n"
                "[2026-12-07, the user said] Remind the user to call mum.\n</memory-context>")

    answers = [ask(model, q).json()["choices"][0]["message"]["content"]
               for q in (recalled, "Remind the user to call mum.")]

    assert answers == [f"You said: {recalled}", "Time to call mum!"]


def test_failures_use_openai_error_shape_and_retry_after(model):
    model.script(fail(429, "slow down", retry_after=3), fail(500, "kaput"))

    limited, broken = ask(model, "a", stream=True), ask(model, "b")

    assert limited.status_code == 429 and limited.headers["retry-after"] == "3"
    assert limited.json()["error"]["message"] == "slow down"
    assert set(limited.json()["error"]) >= {"message", "type", "code"}
    assert broken.status_code == 500 and "retry-after" not in broken.headers


def test_requests_are_recorded_and_reset_forgets_everything(model):
    ask(model, "recorded", extra_field=1)
    model.script(text("unused"))

    recorded = model.wait_for_requests(1, timeout=5)[0]
    assert (recorded.path, recorded.body["extra_field"]) == ("/v1/chat/completions", 1)
    assert recorded.headers["content-type"] == "application/json"
    model.latency = 3
    model.reset()
    assert model.requests == [] and model.latency == 0
    assert ask(model, "after reset").json()["choices"][0]["message"]["content"] == "You said: after reset"


def test_wait_for_requests_gives_up_after_its_timeout(model):
    with pytest.raises(TimeoutError):
        model.wait_for_requests(1, timeout=0.05)


def test_dynamic_replies_receive_the_request_body(model):
    model.script(lambda body: text(f"model was {body['model']}"))

    assert ask(model, "x").json()["choices"][0]["message"]["content"] == "model was m"


def test_a_client_hanging_up_mid_stream_does_not_hurt_the_server(model):
    model.script(text(" ".join(["word"] * 200), chunk_delay=0.01))
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "long"}]}
    with httpx.stream("POST", f"{model.base_url}/chat/completions", json=body) as response:
        next(response.iter_lines())

    assert ask(model, "still there?").json()["choices"][0]["message"]["content"] == "You said: still there?"


def test_two_hundred_requests_are_served_at_once(model):
    together = threading.Barrier(200, timeout=30)

    def answer(body: dict) -> Reply:
        together.wait()
        return text("ok")

    model.script(*[answer] * 200)
    with httpx.Client(limits=httpx.Limits(max_connections=256), timeout=60) as client, \
            ThreadPoolExecutor(max_workers=200) as pool:
        statuses = list(pool.map(lambda i: client.post(
            f"{model.base_url}/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": str(i)}]}).status_code, range(200)))

    assert statuses == [200] * 200 and not together.broken


def test_demo_lists_files_then_summarises_the_result():
    asked = {"messages": [{"role": "user", "content": "What files do I have?"}], "tools": LIST_FILES}
    call = demo_reply(asked).tool_calls[0]
    after_tool = {"messages": asked["messages"] + [
        {"role": "assistant", "content": None, "tool_calls": [{"id": call.id, "type": "function",
                                                               "function": {"name": call.name, "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"entries": ["a.txt", "notes/"]})}]}

    assert (call.name, json.loads(call.arguments)) == ("list_files", {"path": "."})
    assert demo_reply(after_tool).text == "The list_files tool found 2 entries in your workspace: a.txt, notes/."
    assert summarise_listing("") == "Your workspace is empty: list_files found no files."
    assert summarise_listing("a.txt\nsrc/\nsrc/main.py") == \
        "The list_files tool found 3 entries in your workspace: a.txt, src/, src/main.py."
    assert summarise_listing("The directory is empty.") == "The list_files tool answered: The directory is empty."


def test_demo_does_not_list_files_because_a_recalled_block_quotes_its_own_answer():
    """The demo's own answer ends "ask me about your files"; recall may append it to a later message of the user,
    which is then no question about files (a held turn resumed after its worker died listed the workspace)."""
    recalled = ("held turn 2\n\n<memory-context>\n[System note: recalled.]\n\n[2026-12-07, you answered] You said: "
                "“held turn 0”. … or ask me about your files to see a tool call.\n</memory-context>")
    reply = demo_reply({"messages": [{"role": "user", "content": recalled}], "tools": LIST_FILES})

    assert not reply.tool_calls and "You said: “held turn 2”." in reply.text


def test_demo_acknowledges_other_messages():
    reply = demo_reply({"messages": [{"role": "user", "content": "Tell me a joke"}], "tools": LIST_FILES})

    assert reply.tool_calls == [] and "scripted demo model" in reply.text and "Tell me a joke" in reply.text


def test_demo_server_runs_until_sigterm():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "services.demo_model", "--port", str(port), "--demo"], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout.readline().strip() == f"scripted demo model listening on http://127.0.0.1:{port}/v1"
        answer = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=10, json={
            "model": "demo", "messages": [{"role": "user", "content": "files please"}], "tools": LIST_FILES})
        assert answer.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "list_files"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_standalone_fake_picks_a_free_port():
    with FakeModel() as fake:
        assert fake.base_url == f"http://127.0.0.1:{fake.port}/v1"
        assert httpx.get(f"{fake.base_url}/models").json()["data"][0]["id"] == "scripted"
        assert fake.requests[0].path == "/v1/models"


def test_the_fake_counts_requests_answered_at_once(model):
    import threading

    import httpx

    from tests.fakes.model import text

    gate = threading.Barrier(3, timeout=10)
    model.on("together", *[lambda body: (gate.wait(), text("ok"))[1]] * 3)
    with httpx.Client(timeout=20) as client:
        def ask() -> int:
            body = {"model": "scripted", "messages": [{"role": "user", "content": "together"}]}
            return client.post(f"{model.base_url}/chat/completions", json=body).status_code

        threads = [threading.Thread(target=ask) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
    assert model.max_in_flight >= 3
