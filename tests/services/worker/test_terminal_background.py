"""Background processes through the `process` tool, and cancelling a turn whose command still runs."""

from __future__ import annotations

import threading

import pytest

from shared.stores import turns
from services.worker.agent.drain import drain_session
from services.worker.sandbox import process_table, stop_background
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import event_types, post_turn, wait_finished
from tests.services.worker.terminal_turns import (needs_bwrap, one_turn, script_calls,
                                                  sleepers, tool_results)
from tests.support.factories import make_session, make_user
from tests.support.waiting import wait_until


@pytest.fixture
def runtime(make_runtime, data):
    return make_runtime(approval_mode="off", data_dir=data, turn_heartbeat_seconds=0.05)


@needs_bwrap
def test_background_start_poll_log_kill_and_another_users_id_is_not_found(db, model, runtime):
    alice, bob = make_user(db), make_user(db)
    script_calls(model, ("terminal", {"command": "echo hello-bg; sleep 1000.3131", "background": True}))
    _, started = one_turn(db, runtime, alice.id)
    view = started["c1"]
    proc_id = view["session_id"]
    assert proc_id.startswith("proc_") and view["status"] == "running" and "worker restarts" in view["note"]

    # The turn, and the thread its tool call ran on, are over; the process still runs.
    table = process_table(runtime.settings)
    wait_until(lambda: "hello-bg" in table.log(alice.id, proc_id)["output"], timeout=15, what="the first output")
    script_calls(model, ("process", {"action": "list"}), ("process", {"action": "poll", "session_id": proc_id}),
                 ("process", {"action": "log", "session_id": proc_id}))
    _, seen = one_turn(db, runtime, alice.id)
    assert [p["session_id"] for p in seen["c1"]["processes"]] == [proc_id]
    assert seen["c2"]["status"] == "running" and "hello-bg" in seen["c2"]["output_tail"]
    assert seen["c3"]["output"] == "hello-bg\n" and seen["c3"]["log"] == f".hstack/outputs/{proc_id}.log"

    script_calls(model, ("process", {"action": "list"}), ("process", {"action": "poll", "session_id": proc_id}),
                 ("process", {"action": "kill", "session_id": proc_id}))
    _, foreign = one_turn(db, runtime, bob.id)
    assert foreign["c1"] == {"processes": []}
    assert foreign["c2"] == foreign["c3"] == {"error": f"background process {proc_id} not found"}
    assert table.poll(alice.id, proc_id)["status"] == "running"

    script_calls(model, ("process", {"action": "kill", "session_id": proc_id}),
                 ("terminal", {"command": "echo done-bg; exit 4", "background": True}))
    _, killed = one_turn(db, runtime, alice.id)
    assert killed["c1"]["status"] == "killed" and killed["c1"]["killed_because"] == "killed on request"
    wait_until(lambda: not sleepers("1000.3131"), timeout=10, what="the killed sleep to be gone")
    other = killed["c2"]["session_id"]
    script_calls(model, ("process", {"action": "wait", "session_id": other, "timeout": 30}))
    _, waited = one_turn(db, runtime, alice.id)
    assert waited["c1"]["status"] == "exited" and waited["c1"]["exit_code"] == 4
    assert "done-bg" in waited["c1"]["output_tail"]


@needs_bwrap
def test_background_processes_are_bounded_per_user_and_end_with_the_worker(db, model, runtime):
    alice = make_user(db)
    limit = runtime.settings.terminal_max_background
    commands = [("terminal", {"command": f"sleep 1000.{4040 + n}", "background": True}) for n in range(limit + 1)]
    script_calls(model, *commands)

    _, results = one_turn(db, runtime, alice.id)

    assert all(results[f"c{n}"]["status"] == "running" for n in range(1, limit + 1))
    assert "at most" in results[f"c{limit + 1}"]["error"]
    assert stop_background() >= limit
    assert {p["status"] for p in process_table(runtime.settings).list(alice.id)} == {"killed"}
    wait_until(lambda: not sleepers("1000.40"), timeout=10, what="the background sleeps to be gone")


@needs_bwrap
def test_cancelling_the_turn_kills_its_foreground_command(db, model, runtime, redis_client):
    """Reproduction: `sleep 1000` in the foreground, then the client cancels the turn."""
    alice = make_user(db)
    session = make_session(db, alice.id)
    model.script(tool_call([("terminal", {"command": "sleep 1000.5151", "timeout": 100}, "c1")]), text("never"))
    turn = post_turn(db, alice.id, session.id, "wait a long time")
    worker = threading.Thread(target=drain_session, args=(runtime, session.id), daemon=True)
    worker.start()

    wait_until(lambda: sleepers("1000.5151"), timeout=15, what="the sleep to start")
    assert "tool.started" in event_types(redis_client, turn.id)
    turns.request_cancel(db, alice.id, turn.id)

    assert wait_finished(db, turn.id, timeout=15).status == "cancelled"
    worker.join(10)
    wait_until(lambda: not sleepers("1000.5151"), timeout=10, what="the cancelled command to be killed")
    assert set(tool_results(db, turn.id)) == {"c1"}
