"""A turn whose worker died resumes on another worker without duplicating or blindly re-running anything."""

from __future__ import annotations

from collections import Counter

from shared.clock import utcnow
from shared.stores import sessions, turns
from services.worker.agent.drain import drain_session
from services.worker.agent.loop import run_turn
from services.worker.tools.registry import ToolRegistry
from tests.fakes.model import text
from tests.services.worker.helpers import event_types, post_turn, tool, wait_finished, wait_until

DEAD_WORKER = "worker@dead-host:1"
LEASE = 0.2


def claim_then_die(db, user, session, text_in: str, *after_user: dict):
    """What a worker leaves behind when it dies mid-turn: a claimed turn and the messages it stored."""
    turn = post_turn(db, user.id, session.id, text_in)
    claimed = turns.claim_next(db, session.id, DEAD_WORKER, LEASE)
    rows = [{"role": "user", "content": text_in}, *after_user]
    sessions.append_messages(db, session.id, [{**row, "turn_id": turn.id, "turn_position": n}
                                              for n, row in enumerate(rows)])
    wait_until(lambda: (utcnow() - claimed.heartbeat_at).total_seconds() > LEASE, what="the lease to lapse")
    return claimed


def test_a_turn_resumes_after_its_worker_died_mid_tool_call(db, user, session, model, make_runtime):
    runs: list[dict] = []
    registry = ToolRegistry([tool("send_email", lambda ctx, args: runs.append(args) or "sent")])
    call = {"id": "c1", "type": "function", "function": {"name": "send_email", "arguments": '{"to": "bob"}'}}
    turn = claim_then_die(db, user, session, "email bob", {"role": "assistant", "content": None, "tool_calls": [call]})
    model.script(text("I could not confirm the email was sent; please check."))

    drain_session(make_runtime(tools=registry, turn_lease_seconds=LEASE), session.id)

    done = wait_finished(db, turn.id)
    assert done.status == "completed" and done.attempts == 2
    assert runs == []  # the side effect of unknown outcome was not repeated
    stored = sessions.turn_messages(db, turn.id)
    assert [m.turn_position for m in stored] == [0, 1, 2, 3]
    assert Counter((m.role, m.content) for m in stored).most_common(1)[0][1] == 1
    assert stored[2].tool_call_id == "c1" and stored[2].content.startswith("[Tool execution interrupted")
    sent = model.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[3] == {"role": "tool", "tool_call_id": "c1", "content": stored[2].content}


def test_an_answer_stored_before_the_crash_is_not_asked_for_again(db, user, session, model, make_runtime,
                                                                 redis_client):
    turn = claim_then_die(db, user, session, "hi", {"role": "assistant", "content": "Hello again."})

    drain_session(make_runtime(turn_lease_seconds=LEASE), session.id)

    assert wait_finished(db, turn.id).output == "Hello again."
    assert model.requests == []
    assert len(sessions.turn_messages(db, turn.id)) == 2
    wait_until(lambda: event_types(redis_client, turn.id)[-1] == "turn.completed",  # published just after the row
               what="turn.completed on the event stream")


def test_a_worker_that_lost_its_lease_stays_silent(db, user, session, model, make_runtime, redis_client):
    stale = claim_then_die(db, user, session, "hi")
    drain_session(make_runtime(turn_lease_seconds=LEASE), session.id)
    assert wait_finished(db, stale.id).status == "completed"
    before = event_types(redis_client, stale.id)

    run_turn(make_runtime(worker_id=DEAD_WORKER), stale)  # the old worker wakes up and tries to finish

    after = event_types(redis_client, stale.id)
    assert after[len(before):].count("turn.completed") == 0
    assert len(sessions.turn_messages(db, stale.id)) == 2
