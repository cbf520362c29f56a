"""The system prompt: built once per session, frozen with its sha256, replayed byte-identical."""

from __future__ import annotations

import hashlib
from datetime import date

from shared.stores import sessions
from services.worker.agent import prompt
from services.worker.agent.drain import drain_session
from services.worker.registrations import register_tools
from services.worker.tools.registry import ToolRegistry
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import post_turn, wait_finished
from tests.support.factories import make_session
from tests.support.hooks import own_hooks

REGISTRY = register_tools()  # this module's own registry of the built-in tools


def test_the_prompt_is_frozen_at_session_start_and_identical_in_every_call(db, user, model, make_runtime):
    runtime = make_runtime()
    chat = make_session(db, user.id, instructions="Answer like a ship's navigator.")
    model.script(
        tool_call([("list_files", {})]), text("one"),
        text("two"),
        tool_call([("search_files", {"pattern": "x"})]), tool_call([("list_files", {})]), text("three"),
    )
    posted = [post_turn(db, user.id, chat.id, f"question {n}") for n in range(3)]
    drain_session(runtime, chat.id)

    assert [wait_finished(db, t.id).output for t in posted] == ["one", "two", "three"]
    stored = sessions.get_session(db, user.id, chat.id)
    assert stored.system_prompt_sha256 == hashlib.sha256(stored.system_prompt.encode()).hexdigest()
    requests = model.requests
    assert len(requests) == 6
    assert all(r.body["messages"][0] == {"role": "system", "content": stored.system_prompt} for r in requests)
    assert "Answer like a ship's navigator." in stored.system_prompt
    assert stored.system_prompt.startswith(prompt.IDENTITY)
    # Earlier turns are replayed exactly as first sent, so the provider's prompt cache keeps hitting.
    first_turn_last_call = requests[1].body["messages"]
    assert requests[2].body["messages"][: len(first_turn_last_call)] == first_turn_last_call


def test_a_prompt_already_stored_wins_over_a_fresh_build(db, user, model, make_runtime):
    chat = make_session(db, user.id)
    sessions.freeze_system_prompt(db, chat.id, "You are a frozen test prompt.")
    turn = post_turn(db, user.id, chat.id, "hi")
    drain_session(make_runtime(), chat.id)

    assert wait_finished(db, turn.id).output == "You said: hi"
    assert model.requests[0].body["messages"][0]["content"] == "You are a frozen test prompt."


def test_parts_come_in_order_and_empty_parts_are_left_out(db, user, settings):
    chat = make_session(db, user.id, instructions="Be brief.")
    with own_hooks(built_ins=False) as hooks:
        hooks.add_prompt_part(lambda ctx: f"SKILLS for {ctx.session.id}", order=30)
        hooks.add_prompt_part(lambda ctx: "MEMORY: likes tea", order=10)
        hooks.add_prompt_part(lambda ctx: "")
        hooks.add_prompt_part(lambda ctx: None)
        built = prompt.compose_system_prompt(chat, REGISTRY, settings, date(2026, 3, 5)).text

    parts = built.split("\n\n")
    assert parts[0] == prompt.IDENTITY
    assert parts[1].startswith(prompt.TOOL_INTRO)
    assert parts[2:] == ["MEMORY: likes tea", f"SKILLS for {chat.id}", "Be brief.",
                         "Conversation started: Thursday, March 05, 2026"]


def test_tool_guidance_only_mentions_tools_that_exist(db, user, settings):
    chat = make_session(db, user.id)
    only_reading = ToolRegistry([REGISTRY.get("read_file")])

    with_reading = prompt.compose_system_prompt(chat, only_reading, settings, date(2026, 1, 1)).text
    without_tools = prompt.compose_system_prompt(chat, ToolRegistry(), settings, date(2026, 1, 1)).text

    assert "read_file" in with_reading and "write_file" not in with_reading
    assert with_reading.count("private workspace") == 1
    assert without_tools == f"{prompt.IDENTITY}\n\nConversation started: Thursday, January 01, 2026"
