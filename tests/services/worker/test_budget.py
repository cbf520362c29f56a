"""The per-turn iteration budget: when it runs out, one last call without tools gives the answer."""

from __future__ import annotations

from shared.stores import sessions
from services.worker.agent.budget import BUDGET_NOTICE, IterationBudget
from services.worker.agent.drain import drain_session
from services.worker.tools.registry import ToolRegistry
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import post_turn, tool, wait_finished


def test_an_exhausted_budget_ends_with_one_call_without_tools(db, user, session, model, make_runtime):
    runtime = make_runtime(tools=ToolRegistry([tool("echo", lambda ctx, args: args, read_only=True)]),
                           max_iterations=3)
    model.script(*[tool_call([("echo", {"step": n})]) for n in range(3)],
                 text("Here is what I found so far."))
    turn = post_turn(db, user.id, session.id, "keep digging")

    drain_session(runtime, session.id)

    finished = wait_finished(db, turn.id)
    assert finished.status == "completed" and finished.output == "Here is what I found so far."
    bodies = [r.body for r in model.requests]
    assert len(bodies) == 4
    assert all("tools" in b for b in bodies[:3]) and "tools" not in bodies[3]
    assert bodies[3]["messages"][-1] == {"role": "user", "content": BUDGET_NOTICE}
    stored = sessions.turn_messages(db, turn.id)
    assert (stored[-2].role, stored[-2].name, stored[-2].content) == ("user", "budget_notice", BUDGET_NOTICE)
    assert (stored[-1].role, stored[-1].content) == ("assistant", "Here is what I found so far.")
    assert finished.usage["iterations"] == 3 and finished.usage["model_calls"] == 4


def test_the_budget_is_per_turn(db, user, session, model, make_runtime):
    runtime = make_runtime(tools=ToolRegistry([tool("echo", lambda ctx, args: args)]), max_iterations=2)
    model.script(tool_call([("echo", {})]), text("first"), tool_call([("echo", {})]), text("second"))
    first = post_turn(db, user.id, session.id, "one")
    second = post_turn(db, user.id, session.id, "two")

    drain_session(runtime, session.id)

    assert [wait_finished(db, t.id).output for t in (first, second)] == ["first", "second"]
    assert all("tools" in r.body for r in model.requests)


def test_the_budget_counter_refuses_past_its_limit():
    budget = IterationBudget(2)
    assert [budget.consume() for _ in range(3)] == [True, True, False]
    assert budget.used == 2 and budget.remaining == 0
