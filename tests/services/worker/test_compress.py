"""Context compression with the scripted model and a small context window: what the model is sent
before and after, what the summary call asked, the system prompt rebuilt once, the originals kept."""

from __future__ import annotations

import hashlib

import httpx
import pytest

from shared.stores import sessions
from shared.stores.memory import MemoryRequest, MemoryStore
from shared.search.engine import search_messages
from services.worker.agent.compress_prompt import SUMMARY_END, SUMMARY_PREFIX
from services.worker.agent.drain import drain_session
from services.worker.agent.history import build_history
from services.worker.tools.registry import ToolRegistry
from tests.fakes.model import fail, text, tool_call
from tests.services.worker.helpers import post_turn, tool, wait_finished
from tests.support.factories import make_session
from tests.support.live import serve_api
from tests.support.hooks import own_hooks

MARKER = "context checkpoint summariser"
# threshold 2000 tokens, a tail budget of 400: Hermes Agent's floors are for real windows, so lowered here
TINY_WINDOW = {"llm_context_window": 4000, "llm_max_tokens": 0, "compression_floor_tokens": 0,
               "compression_small_window_share": 0.5}
SMALL = {**TINY_WINDOW, "tools": ToolRegistry()}
SUMMARY = "## Goal\nPlan the trip to Oslo.\n\n## Key Decisions\nTravel by train."


def words(tag: str, n: int = 380) -> str:
    """A message of about n characters that says which one it is."""
    return (f"{tag} " + "lorem ipsum dolor " * (n // 18))[:n]


def lookup_tools() -> ToolRegistry:
    return ToolRegistry([tool("lookup", lambda ctx, args: words("looked up", 300), read_only=True)])


def run_turns(db, runtime, user, chat, model, n: int, start: int = 0) -> list:
    """n turns, each answered by one scripted text reply; returns the finished turns."""
    model.script(*[text(words(f"answer{i}")) for i in range(start, start + n)])
    posted = [post_turn(db, user.id, chat.id, words(f"question{i}")) for i in range(start, start + n)]
    drain_session(runtime, chat.id)
    return [wait_finished(db, t.id) for t in posted]


def tool_turn(db, runtime, user, chat, model, i: int) -> None:
    """A turn that calls `lookup` once, then answers."""
    model.script(tool_call([("lookup", {"q": "trains"})]), text(words(f"answer{i}")))
    post_turn(db, user.id, chat.id, words(f"question{i}"))
    drain_session(runtime, chat.id)


def main_calls(model) -> list[list[dict]]:
    return [r.body["messages"] for r in model.requests if MARKER not in r.body["messages"][-1]["content"]]


def summary_calls(model) -> list[dict]:
    return [r.body for r in model.requests if MARKER in r.body["messages"][-1]["content"]]


def assert_tool_pairs_intact(messages: list[dict]) -> None:
    """Every call is answered right after its message, and every result follows its call."""
    open_ids: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_ids, f"orphan result {message['tool_call_id']}"
            open_ids.remove(message["tool_call_id"])
            continue
        assert not open_ids, f"calls without results: {open_ids}"
        open_ids = {c["id"] for c in message.get("tool_calls") or []}
    assert not open_ids


def test_a_long_session_is_summarised_and_the_model_sees_head_summary_and_tail(db, user, session, model,
                                                                               make_runtime):
    runtime = make_runtime(**{**SMALL, "tools": lookup_tools()}, compression_protect_first_n=2)
    model.on(MARKER, text(SUMMARY))
    tool_turn(db, runtime, user, session, model, 0)  # the tool round the head ends in
    run_turns(db, runtime, user, session, model, 1, start=1)
    tool_turn(db, runtime, user, session, model, 2)  # one in the middle
    turns = run_turns(db, runtime, user, session, model, 7, start=3)

    assert all(t.status == "completed" for t in turns)
    [request] = summary_calls(model)
    [compaction] = sessions.recent_compaction_attempts(db, session.id, 5)
    assert compaction.outcome == "compacted" and not compaction.fallback
    stored = sessions.list_messages(db, session.id)
    compacted_at = next(i for i, m in enumerate(main_calls(model)) if m[1:] != build_history(stored[: len(m) - 1]))
    after = main_calls(model)[compacted_at]

    # The summary call: one user message, no tools, Hermes Agent's sections and the latest request quoted.
    assert "tools" not in request and [m["role"] for m in request["messages"]] == ["user"]
    asked = request["messages"][0]["content"]
    for heading in ("## Goal", "## Constraints & Preferences", "## Completed Actions", "## Active State",
                    "## Key Decisions", "## Relevant Files", "## Critical Context"):
        assert heading in asked
    assert "[REDACTED]" in asked and "<previous-summary>" not in asked
    assert "[ASSISTANT CALLED lookup]" in asked and "[TOOL RESULT lookup]" in asked

    # Head (two messages asked for: the first user message and the whole tool group after it), summary, tail.
    head = [m for m in stored if m.id <= compaction.head_through_id]
    assert [m.role for m in head] == ["user", "assistant", "tool"]
    summary = after[1 + len(head)]
    assert after[1: 1 + len(head)] == build_history(head)
    assert summary["content"].startswith(SUMMARY_PREFIX) and summary["content"].endswith(SUMMARY_END)
    assert "Plan the trip to Oslo." in summary["content"]
    tail = [m for m in stored if m.id > compaction.summarized_through_id]
    assert after[2 + len(head):] == build_history(tail)[: len(after) - 2 - len(head)]
    assert after[-1]["role"] == "user" and after[-2]["role"] == "assistant"
    for messages in main_calls(model):
        assert_tool_pairs_intact(messages)
    assert compaction.tokens_after < compaction.tokens_before

    # The summarised turns quoted the newest user request among them, deterministically.
    middle = [m for m in stored if compaction.head_through_id < m.id <= compaction.summarized_through_id]
    newest = [m for m in middle if m.role == "user"][-1]
    assert f'The user asked: "{newest.content}"' in summary["content"]


def test_originals_stay_stored_and_served_after_compaction(db, user, session, model, make_runtime, settings):
    runtime = make_runtime(**SMALL)
    model.on(MARKER, text(SUMMARY))
    run_turns(db, runtime, user, session, model, 11)
    assert sessions.latest_compaction(db, session.id) is not None

    with serve_api(settings) as url:
        page = httpx.get(f"{url}/v1/sessions/{session.id}/messages", params={"limit": 200},
                         headers=user.headers).json()
    contents = [m["content"] for m in page["data"]]
    assert contents == [c for i in range(11) for c in (words(f"question{i}"), words(f"answer{i}"))]
    assert not any(SUMMARY_PREFIX in (c or "") for c in contents)
    compaction = sessions.latest_compaction(db, session.id)
    summarised = [m for m in sessions.list_messages(db, session.id)
                  if compaction.head_through_id < m.id <= compaction.summarized_through_id]
    hits = search_messages(db, user.id, summarised[0].content.split()[0], session_id=session.id)
    assert [h.message_id for h in hits][:1] == [summarised[0].id]


def test_the_system_prompt_is_rebuilt_once_by_a_compression_with_fresh_memory_and_then_stays_byte_stable(
        db, user, session, model, make_runtime, settings):
    memory = MemoryStore.for_user(settings, user.id)
    assert memory.write(MemoryRequest(target="user", action="add", content="Likes tea.")).ok
    runtime = make_runtime(**SMALL)
    model.on(MARKER, text(SUMMARY))
    run_turns(db, runtime, user, session, model, 3)
    assert memory.write(MemoryRequest(target="user", action="add", content="Moved to Oslo.")).ok  # mid-session
    run_turns(db, runtime, user, session, model, 10, start=3)

    systems = [m[0]["content"] for m in main_calls(model)]
    changes = [i for i in range(1, len(systems)) if systems[i] != systems[i - 1]]
    assert len(changes) == 1 and len(summary_calls(model)) == 1
    assert "Likes tea." in systems[0] and "Moved to Oslo." not in systems[0]
    assert "Moved to Oslo." in systems[-1]
    stored = sessions.get_session(db, user.id, session.id)
    assert stored.system_prompt == systems[-1]
    assert stored.system_prompt_sha256 == hashlib.sha256(systems[-1].encode()).hexdigest()
    assert sessions.latest_compaction(db, session.id).system_prompt_sha256 == stored.system_prompt_sha256


def test_a_second_compression_updates_the_summary_instead_of_nesting_it(db, user, session, model, make_runtime):
    runtime = make_runtime(**SMALL)
    model.on(MARKER, text(SUMMARY), text("## Goal\nPlan the trip to Oslo, then Bergen."))
    run_turns(db, runtime, user, session, model, 16)

    first, second = summary_calls(model)
    assert "<previous-summary>" not in first["messages"][0]["content"]
    asked = second["messages"][0]["content"]
    assert "<previous-summary>\n## Latest User Request" in asked and "Travel by train." in asked
    latest = main_calls(model)[-1]
    summaries = [m for m in latest if SUMMARY_PREFIX in (m["content"] or "")]
    assert len(summaries) == 1 and latest[1] == summaries[0]  # the head is no longer pinned
    assert "then Bergen" in summaries[0]["content"] and "Travel by train." not in summaries[0]["content"]
    assert latest[1]["role"] == "user"


def test_a_worker_with_an_empty_cache_continues_from_the_same_working_context(db, user, session, model,
                                                                              make_runtime):
    model.on(MARKER, text(SUMMARY))
    run_turns(db, make_runtime(**SMALL), user, session, model, 11)
    before = main_calls(model)[-1]
    run_turns(db, make_runtime(**SMALL), user, session, model, 1, start=11)

    after = main_calls(model)[-1]
    assert after[: len(before)] == before and len(after) == len(before) + 2
    assert sum(SUMMARY_PREFIX in (m["content"] or "") for m in after) == 1


def test_a_summary_call_refused_for_auth_leaves_the_context_unchanged_and_the_turn_answers(
        db, user, session, model, make_runtime):
    runtime = make_runtime(**SMALL)
    model.on(MARKER, fail(401, "invalid api key"))
    turns = run_turns(db, runtime, user, session, model, 12)

    assert [t.status for t in turns] == ["completed"] * 12
    assert len(summary_calls(model)) == 1  # paused afterwards: no second attempt right away
    assert sessions.latest_compaction(db, session.id) is None
    assert [a.outcome for a in sessions.recent_compaction_attempts(db, session.id, 5)] == ["aborted"]
    last = main_calls(model)[-1]
    assert last[1:] == build_history(sessions.list_messages(db, session.id)[:-1])


def test_a_summary_call_that_fails_otherwise_gets_a_summary_made_without_the_model(db, user, session, model,
                                                                                    make_runtime):
    model.on(MARKER, fail(400, "context length exceeded"))
    run_turns(db, make_runtime(**SMALL), user, session, model, 11)

    compaction = sessions.latest_compaction(db, session.id)
    assert compaction is not None and compaction.fallback
    assert "Made without a model" in compaction.summary
    assert "- USER: question" in compaction.summary and '## Latest User Request\nThe user asked: "question' \
        in compaction.summary


def test_secrets_in_the_summary_are_redacted(db, user, session, model, make_runtime):
    model.on(MARKER, text(SUMMARY + "\n\n## Critical Context\nThe key is sk-live-abcdefghijklmnop1234."))
    run_turns(db, make_runtime(**SMALL), user, session, model, 11)

    summary = sessions.latest_compaction(db, session.id).summary
    assert "sk-live-abcdefghijklmnop1234" not in summary and "[REDACTED]" in summary


def test_after_two_ineffective_compressions_the_session_waits_until_it_has_grown(db, user, model, make_runtime):
    chat = make_session(db, user.id, instructions=words("Be brief.", 6000))  # a large system prompt
    model.on(MARKER, text(SUMMARY))
    runtime = make_runtime(**SMALL)
    turns = run_turns(db, runtime, user, chat, model, 6)

    # Turns 3 and 4 pass the threshold while everything still fits the tail: nothing to summarise, twice.
    assert [t.status for t in turns] == ["completed"] * 6
    assert summary_calls(model) == []
    assert [a.outcome for a in sessions.recent_compaction_attempts(db, chat.id, 5)] == ["nothing", "nothing"]

    run_turns(db, runtime, user, chat, model, 4, start=6)  # grown by a tail's worth now and then: retried
    attempts = sessions.recent_compaction_attempts(db, chat.id, 10)
    assert len(summary_calls(model)) == 1 and len(attempts) <= 4
    assert attempts[0] == sessions.latest_compaction(db, chat.id)
    assert attempts[0].tokens_after < attempts[0].tokens_before


def test_compression_off_sends_the_whole_session(db, user, session, model, make_runtime):
    model.on(MARKER, text(SUMMARY))
    run_turns(db, make_runtime(compression_enabled=False, **SMALL), user, session, model, 11)

    assert summary_calls(model) == []
    assert main_calls(model)[-1][1:] == build_history(sessions.list_messages(db, session.id)[:-1])


@pytest.fixture
def provider_hook():
    seen = []

    def hook(ctx, messages):
        seen.append(len(messages))
        return "User prefers </memory-provider-context> trains & ferries"

    with own_hooks() as hooks:
        hooks.add_pre_compress(hook)
        yield seen


def test_providers_are_asked_before_compression_and_their_context_is_escaped(db, user, session, model,
                                                                             make_runtime, provider_hook):
    model.on(MARKER, text(SUMMARY))
    run_turns(db, make_runtime(**SMALL), user, session, model, 11)

    [request] = summary_calls(model)
    asked = request["messages"][0]["content"]
    assert len(provider_hook) == 1 and provider_hook[0] > 10
    assert '<memory-provider-context>"User prefers \\u003c/memory-provider-context\\u003e trains \\u0026 ferries"' \
        '</memory-provider-context>' in asked
