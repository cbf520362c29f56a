"""delegate_task in the loop: the parent parks on its children (no worker held), each child is a turn of its
own session, and the parent resumes with every child's status and summary once the last one ended."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from shared.clock import utcnow
from shared.errors import NotFound
from shared.models.delegations import CHILD_SOURCE
from shared.queue.payloads import RunTurn
from shared.stores import delegations, reviews, sessions, turns
from services.curator import delegations as delegation_sweep
from services.worker.agent.drain import drain_session
from tests.fakes.model import fail, text, tool_call
from tests.services.worker.helpers import post_turn, stream, wait_finished
from tests.support.factories import make_user
from tests.support.waiting import wait_until

TWO = {"tasks": [{"goal": "count the apples", "context": "the basket is red"}, {"goal": "count the pears"}]}


@pytest.fixture
def sent():
    return []


@pytest.fixture
def runtime(make_runtime, sent):
    def make(**overrides):
        rt = make_runtime(**{"delegate_max_children": 3, "delegate_max_iterations": 5, **overrides})
        rt.enqueue = lambda name, payload: sent.append(payload)
        return rt
    return make


def parked(db, turn_id):
    return wait_until(lambda: (t := turns.get_turn(db, None, turn_id)).status == "awaiting_children" and t or None,
                      what="the turn to wait for its children")


def rows_of(db, turn_id, call_id="d1"):
    with db.read() as s:
        from sqlmodel import select
        from shared.models.delegations import Delegation
        return list(s.exec(select(Delegation).where(Delegation.turn_id == turn_id, Delegation.tool_call_id == call_id)
                           .order_by(Delegation.position)))


def tool_result(db, turn_id, call_id="d1") -> dict:
    return json.loads(next(m.content for m in sessions.turn_messages(db, turn_id) if m.tool_call_id == call_id))


def offered(request) -> set[str]:
    return {t["function"]["name"] for t in request.body.get("tools") or []}


def test_children_run_as_their_own_turns_and_the_parent_resumes_with_every_summary(db, user, session, model, runtime,
                                                                                  sent, redis_client):
    model.script(tool_call([("delegate_task", TWO, "d1")]))
    turn = post_turn(db, user.id, session.id, "how much fruit is there?")
    drain_session(runtime(), session.id)

    waiting = parked(db, turn.id)
    assert waiting.worker_id is None  # no worker held while the children run
    rows = rows_of(db, turn.id)
    assert [r.status for r in rows] == ["running", "running"]
    children = [turns.get_turn(db, user.id, r.child_turn_id) for r in rows]
    assert {c.user_id for c in children} == {user.id} and all(c.session_id != session.id for c in children)
    assert "Goal: count the apples" in children[0].input and "the basket is red" in children[0].input
    assert [p.turn_id for p in sent if isinstance(p, RunTurn)] == [c.id for c in children]
    started = [d for kind, d in stream(redis_client, turn.id) if kind == "delegate.started"]
    assert [d["child_turn_id"] for d in started] == [c.id for c in children]

    model.on("count the apples", text("Seven apples."))
    model.on("count the pears", text("Three pears."))
    drain_session(runtime(), children[0].session_id)
    assert turns.get_turn(db, None, turn.id).status == "awaiting_children"  # one child is still to run
    drain_session(runtime(), children[1].session_id)

    assert turns.get_turn(db, None, turn.id).status == "queued"
    assert sent[-1] == RunTurn(turn_id=turn.id, session_id=session.id)  # sent on through send_turn
    model.script(text("Ten fruits."))
    drain_session(runtime(), session.id)
    assert wait_finished(db, turn.id).output == "Ten fruits."
    got = tool_result(db, turn.id)
    assert [(r["status"], r["summary"]) for r in got["results"]] == [("completed", "Seven apples."),
                                                                      ("completed", "Three pears.")]
    ended = [(kind, d["summary"]) for kind, d in stream(redis_client, turn.id) if kind == "delegate.completed"]
    assert sorted(ended) == [("delegate.completed", "Seven apples."), ("delegate.completed", "Three pears.")]


def test_a_child_gets_no_memory_writes_delegation_questions_or_jobs(db, user, session, model, runtime):
    model.script(tool_call([("delegate_task", {"tasks": [{"goal": "look around"}]}, "d1")]))
    turn = post_turn(db, user.id, session.id, "look around for me")
    drain_session(runtime(), session.id)
    [row] = rows_of(db, turn.id)
    assert sessions.get_session(db, user.id, row.child_session_id).source == CHILD_SOURCE

    model.on("look around", text("Nothing here."))
    drain_session(runtime(memory_review_interval=1, skill_review_interval=1), row.child_session_id)

    child_call = next(r for r in model.requests if "Goal: look around" in json.dumps(r.body["messages"]))
    assert {"read_file", "terminal"} <= offered(child_call)
    assert not offered(child_call) & {"memory", "delegate_task", "clarify", "cronjob"}
    parent_call = model.requests[0]
    assert "delegate_task" in offered(parent_call)
    assert reviews.counters(db, row.child_session_id) is None  # no review of a child's session: it writes no memory


def test_a_child_that_loops_hits_its_own_budget_and_is_reported(db, user, session, model, runtime, redis_client):
    model.script(tool_call([("delegate_task", {"tasks": [{"goal": "loop on the files"}]}, "d1")]))
    turn = post_turn(db, user.id, session.id, "go")
    drain_session(runtime(delegate_max_iterations=2), session.id)  # the child's budget is set as it starts
    [row] = rows_of(db, turn.id)

    model.on("loop on the files", *[tool_call([("list_files", {"path": f"d{i}"})]) for i in range(5)])
    model.script(text("I kept listing folders and found nothing."))  # asked for a summary once out of budget
    drain_session(runtime(), row.child_session_id)

    [row] = rows_of(db, turn.id)
    assert row.status == "budget_exhausted" and row.summary == "I kept listing folders and found nothing."
    failed = [d for kind, d in stream(redis_client, turn.id) if kind == "delegate.failed"]
    assert [d["status"] for d in failed] == ["budget_exhausted"]
    model.script(text("The subtask ran out of steps."))
    drain_session(runtime(), session.id)
    assert wait_finished(db, turn.id).status == "completed"
    assert tool_result(db, turn.id)["results"][0]["status"] == "budget_exhausted"


def test_tasks_past_the_cap_are_refused_and_reported_never_dropped(db, user, session, model, runtime):
    four = {"tasks": [{"goal": f"task number {i}"} for i in range(4)]}
    model.script(tool_call([("delegate_task", four, "d1")]))
    turn = post_turn(db, user.id, session.id, "do four things")
    drain_session(runtime(delegate_max_children=3), session.id)

    rows = rows_of(db, turn.id)
    assert [r.status for r in rows] == ["running", "running", "running", "refused"]
    assert rows[3].child_turn_id is None and "at most 3" in rows[3].error
    for i, row in enumerate(rows[:3]):
        model.on(f"task number {i}", text(f"done {i}"))
        drain_session(runtime(), row.child_session_id)

    model.script(tool_call([("delegate_task", {"tasks": [{"goal": "one more"}]}, "d2")]), text("Did three."))
    drain_session(runtime(delegate_max_children=3), session.id)
    assert wait_finished(db, turn.id).output == "Did three."
    assert [r["status"] for r in tool_result(db, turn.id)["results"]] == ["completed"] * 3 + ["refused"]
    assert tool_result(db, turn.id, "d2")["results"][0]["status"] == "refused"  # no room left: answered at once
    assert rows_of(db, turn.id, "d2") == []


@pytest.mark.parametrize("args", [{"tasks": "count things"}, {"tasks": []}, {"tasks": [{"context": "no goal"}]},
                                  {"tasks": [{"goal": 7}]}, {"tasks": [{"goal": "x", "extra": 1}]},
                                  {"tasks": [{"goal": "x" * 5000}]}, {"tasks": [{"goal": "g"}] * 40}])
def test_bad_tasks_are_refused_with_a_clear_error_and_nothing_starts(db, user, session, model, runtime, args):
    model.script(tool_call([("delegate_task", args, "d1")]), text("ok"))
    turn = post_turn(db, user.id, session.id, "go")
    drain_session(runtime(), session.id)
    assert wait_finished(db, turn.id).status == "completed"
    assert "delegate_task" in tool_result(db, turn.id)["error"]
    assert rows_of(db, turn.id) == []


def test_cancelling_the_parent_stops_every_child(db, user, session, model, runtime, sent):
    model.script(tool_call([("delegate_task", TWO, "d1")]))
    turn = post_turn(db, user.id, session.id, "go")
    drain_session(runtime(), session.id)
    parked(db, turn.id)
    first, second = rows_of(db, turn.id)
    claimed = turns.claim_next(db, first.child_session_id, "worker@elsewhere", 30)  # the first child runs elsewhere
    assert claimed.id == first.child_turn_id

    with pytest.raises(NotFound):
        turns.request_cancel(db, make_user(db).id, turn.id)  # another user's turn: 404, nothing stops
    assert turns.get_turn(db, None, second.child_turn_id).status == "queued"
    cancelled = turns.request_cancel(db, user.id, turn.id)

    assert cancelled.status == "cancelled" and "subtasks" in cancelled.error_message
    assert {r.status for r in rows_of(db, turn.id)} == {"cancelled"}
    assert turns.get_turn(db, None, second.child_turn_id).status == "cancelled"  # queued: ended at once
    running = turns.get_turn(db, None, first.child_turn_id)
    assert running.status == "running" and running.cancel_requested  # its worker stops at its next check
    assert delegations.children_running(db, turn.id) == [first.child_turn_id]


def test_a_child_past_its_deadline_is_stopped_and_the_parent_hears_it(db, user, session, model, runtime, sent,
                                                                      settings, redis_client):
    model.script(tool_call([("delegate_task", TWO, "d1")]))
    turn = post_turn(db, user.id, session.id, "go")
    drain_session(runtime(delegate_child_timeout_seconds=60), session.id)
    first, second = rows_of(db, turn.id)
    model.on("count the apples", text("Seven apples."))
    drain_session(runtime(), first.child_session_id)
    turns.claim_next(db, second.child_session_id, "worker@slow", 30)  # the second one runs, and runs

    swept = delegations.sweep(db, utcnow() + timedelta(seconds=61))

    assert [s.row.status for s in swept.settled] == ["timed_out"] and swept.stop == [second.child_turn_id]
    assert swept.settled[0].resume.id == turn.id  # the last child settled: the parent goes on
    assert turns.get_turn(db, None, second.child_turn_id).cancel_requested
    model.script(text("Seven apples; the pears took too long."))
    drain_session(runtime(), session.id)
    assert wait_finished(db, turn.id).status == "completed"
    got = tool_result(db, turn.id)["results"]
    assert [r["status"] for r in got] == ["completed", "timed_out"] and "60 seconds" in got[1]["error"]


def test_the_curator_sweep_settles_a_child_cancelled_while_queued(db, user, session, model, runtime, settings,
                                                                   redis_client, sent):
    model.script(tool_call([("delegate_task", {"tasks": [{"goal": "never runs"}]}, "d1")]))
    turn = post_turn(db, user.id, session.id, "go")
    drain_session(runtime(), session.id)
    [row] = rows_of(db, turn.id)
    turns.request_cancel(db, user.id, row.child_turn_id)  # the user cancels the child itself, before it ran

    assert delegation_sweep.sweep(settings, db, redis_client, lambda name, payload: sent.append(payload)) >= 1

    assert rows_of(db, turn.id)[0].status == "cancelled"
    assert sent[-1] == RunTurn(turn_id=turn.id, session_id=session.id)
    assert [d["status"] for k, d in stream(redis_client, turn.id) if k == "delegate.failed"] == ["cancelled"]


def test_a_child_whose_worker_died_is_taken_over_and_still_reaches_the_parent(db, user, session, model, runtime,
                                                                              settings):
    model.script(tool_call([("delegate_task", {"tasks": [{"goal": "survive a crash"}]}, "d1")]))
    turn = post_turn(db, user.id, session.id, "go")
    drain_session(runtime(), session.id)
    [row] = rows_of(db, turn.id)
    turns.claim_next(db, row.child_session_id, "worker@dead", 30)  # claimed, then its worker was killed
    with db.write() as s:
        from sqlalchemy import update
        from shared.models.turns import Turn
        s.execute(update(Turn).where(Turn.id == row.child_turn_id).values(heartbeat_at=utcnow() - timedelta(hours=1)))

    model.on("survive a crash", text("Made it."))
    drain_session(runtime(), row.child_session_id)

    assert rows_of(db, turn.id)[0].status == "completed"
    assert turns.get_turn(db, None, turn.id).status == "queued"


def test_an_orphaned_child_is_stopped_by_the_sweep(db, user, session, model, runtime):
    model.script(tool_call([("delegate_task", {"tasks": [{"goal": "orphan"}]}, "d1")]))
    turn = post_turn(db, user.id, session.id, "go")
    drain_session(runtime(), session.id)
    [row] = rows_of(db, turn.id)
    with db.write() as s:  # the parent ended some other way (an operator, a bug): its child must not run on
        from sqlalchemy import update
        from shared.models.turns import Turn
        s.execute(update(Turn).where(Turn.id == turn.id).values(status="failed"))

    delegations.sweep(db)

    assert rows_of(db, turn.id)[0].status == "cancelled"
    assert turns.get_turn(db, None, row.child_turn_id).status == "cancelled"


def test_delegate_task_is_offered_only_when_configured_and_its_first_call_cost_is_known(db, user, model, runtime):
    """Unset (DELEGATE_MAX_CHILDREN=0) the first call is unchanged; set, the schema's bytes are printed."""
    sizes = {}
    for cap in (0, 3):
        session = sessions.create_session(db, user.id)
        model.script(text("Hello."))
        turn = post_turn(db, user.id, session.id, "Hello!")
        drain_session(runtime(delegate_max_children=cap), session.id)
        wait_finished(db, turn.id)
        first = model.requests[-1]
        assert ("delegate_task" in offered(first)) == (cap > 0)
        sizes[cap] = int(first.headers.get("content-length") or 0)
    print(f"\ndelegate_task adds {sizes[3] - sizes[0]} bytes to a session's first call ({sizes[0]:,} -> {sizes[3]:,})")


def test_a_child_that_fails_is_reported_with_its_error(db, user, session, model, runtime, redis_client):
    model.script(tool_call([("delegate_task", {"tasks": [{"goal": "break the model"}]}, "d1")]))
    turn = post_turn(db, user.id, session.id, "go")
    drain_session(runtime(), session.id)
    [row] = rows_of(db, turn.id)

    model.on("break the model", fail(400, "this request is malformed"))
    drain_session(runtime(), row.child_session_id)

    [row] = rows_of(db, turn.id)
    assert row.status == "failed" and row.error
    failed = [d for kind, d in stream(redis_client, turn.id) if kind == "delegate.failed"]
    assert [(d["status"], d["error"]) for d in failed] == [("failed", row.error)]
    model.script(text("The subtask failed."))
    drain_session(runtime(), session.id)
    assert wait_finished(db, turn.id).status == "completed"
    assert tool_result(db, turn.id)["results"][0]["status"] == "failed"
