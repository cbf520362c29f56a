"""An MCP tool's write at the approval gate: parked as "a write by an MCP tool" with its name and arguments,
run once approved, refused when denied, remembered for the session when approved for it, never asked where
nobody can answer. A fake write tool stands for the server's (tests/e2e/test_mcp.py drives a real one)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from shared.stores import approvals, sessions, turns
from services.worker.agent.drain import drain_session
from services.worker.agent.toolcalls import ToolBatch
from services.worker.mcp_client.tools import shown_call
from services.worker.tools.registry import ToolContext, ToolRegistry
from shared.llm import ToolCall
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import post_turn, tool, wait_finished
from tests.support.waiting import wait_until

NAME = "mcp_home_turn_on"


def write_tool(ran: list[dict]):
    def handler(ctx, args):
        ran.append(args)
        return {"server": "home", "output": "on"}
    return replace(tool(NAME, handler, properties={"entity": {"type": "string"}}), approval_write=shown_call(NAME))


def results(db, turn_id) -> list[str]:
    return [m.content for m in sessions.turn_messages(db, turn_id) if m.role == "tool"]


def test_a_write_parks_with_its_name_and_arguments_and_runs_once_approved(db, user, session, model, make_runtime):
    ran: list[dict] = []
    registry = ToolRegistry([write_tool(ran)])
    model.script(tool_call([(NAME, {"entity": "light.kitchen"}, "c1")]))
    turn = post_turn(db, user.id, session.id, "lights on")

    drain_session(make_runtime(tools=registry, approval_mode="smart"), session.id)

    wait_until(lambda: turns.get_turn(db, None, turn.id).status == "awaiting_approval" or None, what="the park")
    assert ran == []
    [pending] = approvals.list_approvals(db, user.id, pending_only=True)
    assert pending.command == 'mcp_home_turn_on {"entity": "light.kitchen"}'
    assert pending.reason == "a write by an MCP tool (mcp_home_turn_on)"
    approvals.decide(db, user.id, pending.id, approve=True, scope="session")
    model.script(text("The kitchen light is on."), tool_call([(NAME, {"entity": "light.hall"}, "c2")]), text("Both."))
    drain_session(make_runtime(tools=registry), session.id)
    assert wait_finished(db, turn.id).output == "The kitchen light is on."

    again = post_turn(db, user.id, session.id, "and the hall")
    drain_session(make_runtime(tools=registry), session.id)

    assert wait_finished(db, again.id).output == "Both."  # approved for the session: not asked again
    assert ran == [{"entity": "light.kitchen"}, {"entity": "light.hall"}]


def test_a_denied_write_never_runs_and_the_model_is_told(db, user, session, model, make_runtime):
    ran: list[dict] = []
    registry = ToolRegistry([write_tool(ran)])
    model.script(tool_call([(NAME, {"entity": "lock.front"}, "c1")]))
    turn = post_turn(db, user.id, session.id, "unlock")
    drain_session(make_runtime(tools=registry), session.id)
    [pending] = wait_until(lambda: approvals.list_approvals(db, user.id, pending_only=True), what="the question")

    approvals.decide(db, user.id, pending.id, approve=False, scope="once")
    model.script(text("I did not unlock it."))
    drain_session(make_runtime(tools=registry), session.id)

    assert wait_finished(db, turn.id).output == "I did not unlock it."
    assert ran == []
    assert "the user denied" in json.loads(results(db, turn.id)[0])["error"]


def test_approvals_off_runs_a_write_without_asking(db, user, session, model, make_runtime):
    ran: list[dict] = []
    model.script(tool_call([(NAME, {"entity": "fan"})]), text("done"))
    turn = post_turn(db, user.id, session.id, "fan on")

    drain_session(make_runtime(tools=ToolRegistry([write_tool(ran)]), approval_mode="off"), session.id)

    assert wait_finished(db, turn.id).output == "done" and ran == [{"entity": "fan"}]


class CommandsOnly:
    """A gate that judges shell commands and knows nothing of MCP writes."""

    def check(self, call_id, tool, command):
        raise AssertionError("never asked about a command")


@pytest.mark.parametrize("gate", [None, CommandsOnly()], ids=["unattended", "commands-only"])
def test_where_nobody_can_approve_a_write_is_refused(settings, user, gate):
    ran: list[dict] = []
    ctx = ToolContext(user_id=user.id, session_id="s", turn_id="t", settings=settings)
    out = ToolBatch(ToolRegistry([write_tool(ran)]), ctx, lambda: False, gate).run(
        [ToolCall("c1", NAME, json.dumps({"entity": "door"}))], lambda result: None)

    assert ran == [] and not out[0].ok
    assert "approval" in json.loads(out[0].content)["error"]
