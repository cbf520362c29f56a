"""todo: the agent's plan for a session — written, updated by id, read back compactly, kept through compression."""

from __future__ import annotations

import json

from shared.stores import sessions, todos
from services.worker.agent.drain import drain_session
from services.worker.tools.registry import ToolRegistry
from services.worker.tools.todo import TODO
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import post_turn, wait_finished
from tests.services.worker.test_compress import MARKER, SUMMARY, TINY_WINDOW, main_calls, run_turns

PLAN = [{"id": "1", "content": "Find the train times", "status": "in_progress"},
        {"id": "2", "content": "Book the hotel", "status": "pending"}]


def results(db, turn_id) -> list[str]:
    return [m.content for m in sessions.turn_messages(db, turn_id) if m.role == "tool"]


def test_the_plan_is_written_updated_by_id_and_read_back_compactly(db, user, session, model, make_runtime):
    runtime = make_runtime(tools=ToolRegistry([TODO]))
    model.script(tool_call([("todo", {"todos": PLAN}, "c1")]),
                 tool_call([("todo", {"todos": [{"id": "1", "status": "completed"},
                                                {"id": "3", "content": "Pack"}], "merge": True}, "c2")]),
                 tool_call([("todo", {}, "c3")]), text("Planned."))
    turn = post_turn(db, user.id, session.id, "plan my trip")

    drain_session(runtime, session.id)

    assert wait_finished(db, turn.id).output == "Planned."
    first, second, read = results(db, turn.id)
    assert first == "Plan (0/2 done):\n[>] 1. Find the train times\n[ ] 2. Book the hotel"
    assert second == "Plan (1/3 done):\n[x] 1. Find the train times\n[ ] 2. Book the hotel\n[ ] 3. Pack"
    assert read == second
    assert [i["status"] for i in todos.items(db, session.id)] == ["completed", "pending", "pending"]


def test_a_bad_item_is_refused_and_the_plan_is_unchanged(db, user, session, model, make_runtime):
    runtime = make_runtime(tools=ToolRegistry([TODO]))
    todos.replace(db, session.id, PLAN)
    model.script(tool_call([("todo", {"todos": [{"id": "1", "content": "x", "status": "done-ish"}]}, "c1")]),
                 text("ok"))
    turn = post_turn(db, user.id, session.id, "update")

    drain_session(runtime, session.id)

    wait_finished(db, turn.id)
    assert "status must be one of" in json.loads(results(db, turn.id)[0])["error"]
    assert todos.items(db, session.id) == PLAN


def test_the_plan_survives_compression_in_what_the_model_is_sent(db, user, session, model, make_runtime):
    """Reproduction: a long session is compacted; the summary the model gets must still carry the plan."""
    runtime = make_runtime(**TINY_WINDOW, tools=ToolRegistry([TODO]))
    todos.replace(db, session.id, PLAN)
    model.on(MARKER, text(SUMMARY))

    run_turns(db, runtime, user, session, model, 11)

    assert sessions.latest_compaction(db, session.id) is not None
    [summary] = {m["content"] for call in main_calls(model) for m in call if "Plan the trip to Oslo." in
                 (m.get("content") or "")}
    assert "[>] 1. Find the train times" in summary and "[ ] 2. Book the hotel" in summary
