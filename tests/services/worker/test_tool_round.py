"""A tool-calling round: stored before running, results in call order, parallel reads, errors the model can read."""

from __future__ import annotations

import json
import threading

from shared.ops import metrics
from shared.stores import sessions
from services.worker.agent.drain import drain_session
from services.worker.tools.registry import ToolRegistry
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import event_types, post_turn, stream, tool, wait_finished


def probe_tool(db, seen: list):
    """A side-effecting tool that records whether its assistant message was already stored when it ran."""

    def handler(ctx, args):
        stored = sessions.turn_messages(db, ctx.turn_id)
        calls = [c["function"]["name"] for m in stored if m.role == "assistant" for c in (m.tool_calls or [])]
        seen.append("probe" in calls)
        return {"probed": True}

    return tool("probe", handler)


def test_the_tool_call_message_is_stored_before_the_tool_runs(db, user, session, model, make_runtime):
    seen: list[bool] = []
    runtime = make_runtime(tools=ToolRegistry([probe_tool(db, seen)]))
    model.script(tool_call([("probe", {})], text="Let me check."), text("All checked."))
    turn = post_turn(db, user.id, session.id, "check it")

    drain_session(runtime, session.id)

    assert wait_finished(db, turn.id).output == "All checked."
    assert seen == [True]
    roles = [(m.turn_position, m.role) for m in sessions.turn_messages(db, turn.id)]
    assert roles == [(0, "user"), (1, "assistant"), (2, "tool"), (3, "assistant")]


def test_a_mixed_batch_answers_every_call_in_order_and_reads_run_in_parallel(db, user, session, model, make_runtime,
                                                                           redis_client):
    barrier = threading.Barrier(2, timeout=5)
    echo_runs: list[dict] = []

    def meet(ctx, args):
        barrier.wait()  # only passes when both calls run at the same time
        return f"met {args['who']}"

    def echo(ctx, args):
        echo_runs.append(args)
        return args

    def boom(ctx, args):
        raise RuntimeError("disk on fire")

    registry = ToolRegistry([
        tool("meet", meet, read_only=True), tool("echo", echo, read_only=True),
        probe_tool(db, []), tool("boom", boom),
    ])
    model.script(
        tool_call([
            ("meet", {"who": "a"}, "c1"), ("meet", {"who": "b"}, "c2"), ("probe", {}, "c3"),
            ("echo", {"x": 1}, "c4"), ("nope", {}, "c5"), ("echo", "{oops", "c6"), ("echo", {"x": 1}, "c7"),
            ("echo", "[1, 2]", "c8"), ("boom", {}, "c9"),
        ]),
        text("Done despite the errors."),
    )
    turn = post_turn(db, user.id, session.id, "do many things")

    drain_session(make_runtime(tools=registry), session.id)

    assert wait_finished(db, turn.id).output == "Done despite the errors."
    results = [m for m in sessions.turn_messages(db, turn.id) if m.role == "tool"]
    assert [m.tool_call_id for m in results] == [f"c{n}" for n in range(1, 10)]
    content = {m.tool_call_id: m.content for m in results}
    assert content["c1"] == "met a" and content["c2"] == "met b"
    assert json.loads(content["c3"]) == {"probed": True}
    assert content["c4"] == content["c7"] == json.dumps({"x": 1})
    assert echo_runs == [{"x": 1}]  # the identical second call reused the first result
    assert json.loads(content["c5"])["error"] == "Unknown tool 'nope'. Available: meet, echo, probe, boom"
    assert json.loads(content["c6"])["error"].startswith("Invalid tool arguments")
    assert json.loads(content["c8"])["error"] == "Invalid tool arguments: expected a JSON object"
    assert "disk on fire" in json.loads(content["c9"])["error"]
    # The model saw the same results, in call order, right after its tool-call message.
    sent = model.requests[1].body["messages"]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == [f"c{n}" for n in range(1, 10)]
    completed = {d["id"]: d["ok"] for kind, d in stream(redis_client, turn.id) if kind == "tool.completed"}
    assert completed == {"c1": True, "c2": True, "c3": True, "c4": True, "c5": False, "c6": False, "c7": True,
                         "c8": False, "c9": False}


def test_events_follow_the_turn(db, user, session, model, make_runtime, redis_client):
    model.script(tool_call([("list_files", {}, "c1")]), text("The workspace is empty."))
    turn = post_turn(db, user.id, session.id, "what is in my workspace?")

    drain_session(make_runtime(), session.id)

    finished = wait_finished(db, turn.id)
    kinds = event_types(redis_client, turn.id)
    assert kinds[:3] == ["turn.started", "tool.started", "tool.completed"]
    assert kinds[-1] == "turn.completed" and set(kinds[3:-1]) == {"message.delta"}
    events = stream(redis_client, turn.id)
    assert "".join(d["delta"] for kind, d in events if kind == "message.delta") == finished.output
    assert events[1][1] == {"id": "c1", "name": "list_files", "arguments": "{}"}
    assert events[-1][1]["output"] == finished.output
    assert events[-1][1]["usage"] == finished.usage
    assert finished.usage["model_calls"] == 2 and finished.usage["tool_calls"] == 1
    assert finished.usage["iterations"] == 2 and finished.usage["completion_tokens"] > 0
    assert redis_client.ttl(f"turn:{turn.id}:events") > 0
    exposition = metrics.render(redis_client, {})
    assert 'hstack_turns_finished_total{status="completed"}' in exposition
    assert 'hstack_tool_calls_total{tool="list_files"}' in exposition
    assert "hstack_turn_duration_seconds_count" in exposition


def test_path_scoped_calls_share_a_round_only_when_their_paths_differ(db, user, session, model, make_runtime):
    """Writes to different files run together; two calls on one file (spelled two ways) and an exclusive tool
    never run beside anything — each would pass a two-party barrier only if another call ran at the same time."""
    different = threading.Barrier(2, timeout=5)
    same = threading.Barrier(2, timeout=0.3)
    order: list[str] = []

    def write(ctx, args):
        different.wait()
        return f"wrote {args['path']}"

    def edit(ctx, args):
        order.append(f"edit {args['n']}")
        try:
            same.wait()
            return "together"
        except threading.BrokenBarrierError:
            same.reset()
            return "alone"

    def shell(ctx, args):
        order.append("shell")
        return "ran"

    registry = ToolRegistry([
        tool("write", write, path_arg="path"), tool("edit", edit, path_arg="path"),
        tool("shell", shell, read_only=True, exclusive=True),
    ])
    model.script(tool_call([
        ("write", {"path": "a.txt"}, "c1"), ("write", {"path": "b.txt"}, "c2"),
        ("edit", {"path": "c.txt", "n": 1}, "c3"), ("edit", {"path": "./c.txt", "n": 2}, "c4"),
        ("shell", {}, "c5"), ("edit", {"path": "d.txt", "n": 3}, "c6"),
    ]), text("Done."))
    turn = post_turn(db, user.id, session.id, "edit things")

    drain_session(make_runtime(tools=registry), session.id)

    assert wait_finished(db, turn.id).output == "Done."
    content = {m.tool_call_id: m.content for m in sessions.turn_messages(db, turn.id) if m.role == "tool"}
    assert content["c1"] == "wrote a.txt" and content["c2"] == "wrote b.txt"
    assert content["c3"] == content["c4"] == content["c6"] == "alone"
    assert order == ["edit 1", "edit 2", "shell", "edit 3"]
