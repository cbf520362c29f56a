"""clarify in the loop: the turn parks on the question (no worker held), the answer resumes the same turn."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from shared.clock import utcnow
from shared.errors import InvalidInput, InvalidState, NotFound
from shared.stores import clarifications, sessions, turns
from services.worker.agent.drain import drain_session
from services.worker.tools.registry import ToolRegistry
from services.worker.tools.clarify import CLARIFY
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import post_turn, stream, tool, wait_finished
from tests.support.factories import make_user
from tests.support.waiting import wait_until

ASK = {"question": "Which theme should the site use?", "choices": ["Light", "Dark", "Solarized"]}


def registry(seen: list | None = None) -> ToolRegistry:
    return ToolRegistry([CLARIFY, tool("note", lambda ctx, args: (seen or []).append("note") or "noted",
                                       read_only=True)])


def awaiting(db, turn_id):
    return wait_until(lambda: (t := turns.get_turn(db, None, turn_id)).status == "awaiting_input" and t or None,
                      what="the turn to wait for an answer")


def tool_results(db, turn_id) -> list[str]:
    return [m.content for m in sessions.turn_messages(db, turn_id) if m.role == "tool"]


def test_a_question_parks_the_turn_and_the_answer_resumes_the_same_turn(db, user, session, model, make_runtime,
                                                                        redis_client):
    """Reproduction: the model calls clarify; the user picks "Dark"; the model must hear exactly that choice."""
    model.script(tool_call([("note", {}, "c0"), ("clarify", ASK, "c1")]))
    turn = post_turn(db, user.id, session.id, "set up my site")

    drain_session(make_runtime(tools=registry()), session.id)

    parked = awaiting(db, turn.id)
    assert parked.worker_id is None  # no worker held while it waits
    assert tool_results(db, turn.id) == ["noted"]
    [pending] = clarifications.list_pending(db, user.id)
    asked = [data for kind, data in stream(redis_client, turn.id) if kind == "clarify.requested"]
    assert asked == [{"clarification_id": pending.id, "question": ASK["question"], "choices": ASK["choices"],
                      "expires_at": pending.expires_at.isoformat()}]

    answered = clarifications.answer(db, user.id, pending.id, "Dark")
    assert answered.resume.id == turn.id and answered.resume.status == "queued"
    model.script(text("Dark theme it is."))
    drain_session(make_runtime(tools=registry()), session.id)

    done = wait_finished(db, turn.id)
    assert (done.status, done.output) == ("completed", "Dark theme it is.")
    assert model.requests[-1].body["messages"][-1] == {"role": "tool", "tool_call_id": "c1",
                                                       "content": json.dumps({"answer": "Dark"})}
    with pytest.raises(InvalidState):
        clarifications.answer(db, user.id, pending.id, "Light").raise_conflict()


def test_an_unanswered_question_goes_on_with_no_answer(db, user, session, model, make_runtime):
    model.script(tool_call([("clarify", ASK, "c1")]))
    turn = post_turn(db, user.id, session.id, "set up my site")
    drain_session(make_runtime(tools=registry()), session.id)
    awaiting(db, turn.id)

    expired = clarifications.expire_due(db, utcnow() + timedelta(seconds=601))

    assert turn.id in [t.id for _, t in expired]
    model.script(text("I picked Light for now."))
    drain_session(make_runtime(tools=registry()), session.id)
    assert wait_finished(db, turn.id).output == "I picked Light for now."
    assert json.loads(tool_results(db, turn.id)[-1])["answer"] is None


def test_a_choice_not_offered_and_another_users_answer_are_refused(db, user, session, model, make_runtime):
    model.script(tool_call([("clarify", ASK, "c1")]))
    turn = post_turn(db, user.id, session.id, "set up my site")
    drain_session(make_runtime(tools=registry()), session.id)
    awaiting(db, turn.id)
    [pending] = clarifications.list_pending(db, user.id)

    with pytest.raises(NotFound):
        clarifications.answer(db, make_user(db).id, pending.id, "Dark")
    with pytest.raises(InvalidInput):
        clarifications.answer(db, user.id, pending.id, "rm -rf /")

    assert turns.get_turn(db, None, turn.id).status == "awaiting_input"
    assert clarifications.list_pending(db, user.id)[0].status == "pending"


def test_a_turn_nobody_can_answer_goes_on_at_once(db, user, session, model, make_runtime):
    """An OpenAI-endpoint or webhook turn (not interactive) never parks: the model hears there is nobody to ask."""
    model.script(tool_call([("clarify", ASK, "c1")]), text("Assumed Light."))
    turn, _ = turns.create_turn(db, user.id, session.id, "set up my site", interactive=False)

    drain_session(make_runtime(tools=registry()), session.id)

    assert wait_finished(db, turn.id).output == "Assumed Light."
    assert "Nobody can answer" in json.loads(tool_results(db, turn.id)[-1])["note"]
    assert clarifications.list_pending(db, user.id) == []


def test_a_bad_question_is_an_error_the_model_reads(db, user, session, model, make_runtime):
    model.script(tool_call([("clarify", {"question": "Ok?", "choices": ["yes"]}, "c1")]), text("Fine."))
    turn = post_turn(db, user.id, session.id, "hi")

    drain_session(make_runtime(tools=registry()), session.id)

    assert wait_finished(db, turn.id).status == "completed"
    assert "2 to 6 distinct choices" in json.loads(tool_results(db, turn.id)[-1])["error"]
