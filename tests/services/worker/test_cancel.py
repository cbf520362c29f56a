"""Cancelling a turn: mid-stream, between tool steps, or before it started."""

from __future__ import annotations

import threading

from shared.stores import sessions, turns
from services.worker.agent.drain import drain_session
from services.worker.tools.registry import ToolRegistry
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import event_types, post_turn, tool, wait_finished, wait_until

LONG_ANSWER = " ".join(f"word{n}" for n in range(60))


def drain_in_background(runtime, session_id) -> threading.Thread:
    worker = threading.Thread(target=drain_session, args=(runtime, session_id), daemon=True)
    worker.start()
    return worker


def test_cancelling_mid_stream_keeps_the_partial_answer(db, user, session, model, make_runtime, redis_client):
    runtime = make_runtime(turn_heartbeat_seconds=0.05)
    model.script(text(LONG_ANSWER, chunk_delay=0.05))
    turn = post_turn(db, user.id, session.id, "tell me a long story")
    worker = drain_in_background(runtime, session.id)

    wait_until(lambda: "message.delta" in event_types(redis_client, turn.id), what="the first delta")
    turns.request_cancel(db, user.id, turn.id)

    cancelled = wait_finished(db, turn.id)
    worker.join(10)
    assert (cancelled.status, cancelled.error_code) == ("cancelled", "cancelled")
    assert cancelled.error_message == "Cancelled by the client."
    last = sessions.turn_messages(db, turn.id)[-1]
    assert last.role == "assistant" and LONG_ANSWER.startswith(last.content) and last.content != LONG_ANSWER
    assert cancelled.output == last.content
    wait_until(lambda: event_types(redis_client, turn.id)[-1] == "turn.cancelled",  # published just after the row
               what="turn.cancelled on the event stream")


def test_cancelling_between_tool_steps_skips_the_rest_and_stops(db, user, session, model, make_runtime,
                                                               redis_client):
    def wait_for_cancel(ctx, args):
        wait_until(ctx.cancelled, what="the cancel request to reach the tool")
        return "noticed the cancellation"

    ran: list[str] = []
    registry = ToolRegistry([tool("wait_for_cancel", wait_for_cancel),
                             tool("write_note", lambda ctx, args: ran.append("write_note") or "written")])
    runtime = make_runtime(tools=registry, turn_heartbeat_seconds=0.05)
    model.script(tool_call([("wait_for_cancel", {}, "c1"), ("write_note", {}, "c2")]))
    turn = post_turn(db, user.id, session.id, "do two things")
    worker = drain_in_background(runtime, session.id)

    wait_until(lambda: "tool.started" in event_types(redis_client, turn.id), what="the tools to start")
    turns.request_cancel(db, user.id, turn.id)

    assert wait_finished(db, turn.id).status == "cancelled"
    worker.join(10)
    results = {m.tool_call_id: m.content for m in sessions.turn_messages(db, turn.id) if m.role == "tool"}
    assert results["c1"] == "noticed the cancellation"
    assert results["c2"].startswith("[Tool execution skipped") and ran == []
    assert len(model.requests) == 1


def test_a_turn_cancelled_while_queued_never_runs(db, user, session, model, make_runtime):
    turn = post_turn(db, user.id, session.id, "never mind")
    turns.request_cancel(db, user.id, turn.id)

    assert drain_session(make_runtime(), session.id) == 0
    assert model.requests == [] and sessions.turn_messages(db, turn.id) == []
