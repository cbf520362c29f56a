"""The memory tool as the model uses it: writes the caller's own files, caps retries per turn, stages writes."""

from __future__ import annotations

import json

from shared.stores import memory_staged
from shared.stores.memory import MemoryStore
from services.worker.agent.drain import drain_session
from services.worker.tools.memory import FAILURES
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import post_turn, wait_finished
from tests.support.factories import make_session, make_user


def tool_results(requests) -> list[dict]:
    """Every memory tool result the model was sent, in order (each result once)."""
    seen: dict[str, dict] = {}
    for request in requests:
        for message in request.body["messages"]:
            if message["role"] == "tool":
                seen.setdefault(message["tool_call_id"], json.loads(message["content"]))
    return list(seen.values())


def remove_missing() -> dict:
    return {"action": "remove", "target": "memory", "old_text": "no such entry"}


def test_the_tool_writes_the_calling_users_own_file_only(db, settings, user, session, model, make_runtime):
    bystander = make_user(db)
    model.script(tool_call([("memory", {"action": "add", "target": "user", "content": "Name: Grace"})]),
                 text("Noted."))
    turn = post_turn(db, user.id, session.id, "call me Grace")
    drain_session(make_runtime(), session.id)

    assert wait_finished(db, turn.id).output == "Noted."
    [result] = tool_results(model.requests)
    assert result["success"] is True and result["message"] == "Entry added." and "current_entries" not in result
    assert MemoryStore.for_user(settings, user.id).entries("user") == ["Name: Grace"]
    assert MemoryStore.for_user(settings, bystander.id).entries("user") == []


def test_after_three_failures_in_a_turn_the_model_is_told_to_stop(db, user, session, model, make_runtime):
    model.script(*[tool_call([("memory", remove_missing())]) for _ in range(4)], text("Could not update memory."),
                 tool_call([("memory", remove_missing())]), text("again"))
    first = post_turn(db, user.id, session.id, "forget the missing thing")
    second = post_turn(db, user.id, session.id, "try once more")
    drain_session(make_runtime(), session.id)

    assert [wait_finished(db, t.id).status for t in (first, second)] == ["completed", "completed"]
    results = tool_results(model.requests)
    assert [r.get("done") for r in results[:3]] == [None, None, None]
    assert all(r["error"] == "No entry matched 'no such entry'." for r in results[:3])
    assert results[3]["done"] is True and results[3]["success"] is False
    assert "failed 4 times this turn. Stop retrying" in results[3]["error"]
    assert results[4]["error"] == "No entry matched 'no such entry'."  # a new turn starts counting again
    assert "done" not in results[4]


def test_failures_are_counted_per_turn_even_when_turns_share_a_worker():
    FAILURES.forget("turn_a"), FAILURES.forget("turn_b")
    assert [FAILURES.failed("turn_a") for _ in range(3)] == [1, 2, 3]
    assert FAILURES.failed("turn_b") == 1
    FAILURES.forget("turn_a")
    assert FAILURES.failed("turn_a") == 1


def test_with_write_approval_the_write_is_staged_not_applied(db, settings, user, session, model, make_runtime):
    model.script(tool_call([("memory", {"action": "add", "target": "memory", "content": "Deploy on Fridays"})]),
                 text("Asked for approval."))
    turn = post_turn(db, user.id, session.id, "remember the deploy day")
    drain_session(make_runtime(memory_write_approval=True), session.id)

    assert wait_finished(db, turn.id).status == "completed"
    [result] = tool_results(model.requests)
    assert result["success"] is True and result["staged"] is True
    [pending] = memory_staged.list_pending(db, user.id)
    assert pending.id == result["pending_id"] and pending.session_id == session.id
    assert MemoryStore.for_user(settings, user.id).entries("memory") == []


def test_a_malformed_call_is_refused_before_staging(db, user, model, make_runtime):
    chat = make_session(db, user.id)
    model.script(tool_call([("memory", {"action": "add", "target": "memory"})]), text("oops"))
    turn = post_turn(db, user.id, chat.id, "remember nothing")
    drain_session(make_runtime(memory_write_approval=True), chat.id)

    assert wait_finished(db, turn.id).status == "completed"
    [result] = tool_results(model.requests)
    assert result == {"success": False, "error": "Content cannot be empty."}
    assert memory_staged.list_pending(db, user.id) == []
