"""Per-turn context blocks ride on the user message, are stored once, and replay byte-identical."""

from __future__ import annotations

import pytest

from shared.stores import sessions
from services.worker.agent import context
from services.worker.agent.drain import drain_session
from tests.fakes.model import text
from tests.services.worker.helpers import post_turn, wait_finished
from tests.support.hooks import own_hooks


@pytest.fixture
def recall_block():
    """A context builder that says which turn it saw, registered for this test only."""
    def builder(ctx: context.TurnContext) -> str | None:
        return f"<recall>seen for {ctx.turn.input}</recall>" if "remember" in ctx.turn.input else None

    with own_hooks() as hooks:
        hooks.add_turn_context(builder)
        yield builder


def test_a_block_reaches_the_model_with_the_users_words_and_replays_identically(db, user, session, model,
                                                                                make_runtime, recall_block):
    runtime = make_runtime()
    model.script(text("noted"), text("fine"))
    first = post_turn(db, user.id, session.id, "please remember my cat")
    second = post_turn(db, user.id, session.id, "and nothing else")
    drain_session(runtime, session.id)
    assert [wait_finished(db, t.id).status for t in (first, second)] == ["completed", "completed"]

    sent_first = model.requests[0].body["messages"][-1]["content"]
    assert sent_first == "please remember my cat\n\n<recall>seen for please remember my cat</recall>"
    replayed = [m["content"] for m in model.requests[1].body["messages"] if m["role"] == "user"]
    assert replayed == [sent_first, "and nothing else"]

    stored = [m for m in sessions.list_messages(db, session.id) if m.role == "user"]
    assert [m.content for m in stored] == ["please remember my cat", "and nothing else"]
    assert stored[0].api_content == sent_first and stored[1].api_content is None


def test_a_failing_builder_costs_nothing_but_its_block(db, user, session, model, make_runtime):
    def broken(ctx):
        raise RuntimeError("provider down")

    with own_hooks() as hooks:
        hooks.add_turn_context(broken)
        turn = post_turn(db, user.id, session.id, "hello")
        drain_session(make_runtime(), session.id)
    assert wait_finished(db, turn.id).output == "You said: hello"


def test_after_turn_hooks_see_how_each_turn_ended(db, user, session, model, make_runtime):
    seen = []

    def hook(ctx, status, output):
        seen.append((ctx.turn.id, status, output))

    with own_hooks() as hooks:
        hooks.add_after_turn(hook)
        turn = post_turn(db, user.id, session.id, "hello")
        drain_session(make_runtime(), session.id)
    assert seen == [(turn.id, "completed", "You said: hello")]
