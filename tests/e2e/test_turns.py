"""A turn travels api → Redis → worker → model → store → SSE, with the real processes."""

from __future__ import annotations

import json
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.fakes.model import Reply, text, tool_call
from tests.support.processes import Stack, wait_for_turn, wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(fake_model):
    s = Stack(model_url=fake_model.base_url)
    with s:
        s.start_api()
        s.start_worker()
        yield s


def read_sse(client: httpx.Client, path: str, headers: dict | None = None) -> list[dict]:
    """Every SSE frame of a stream until the server closes it."""
    events, frame = [], {}
    with client.stream("GET", path, headers=headers or {}, timeout=30) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if not line:
                if "event" in frame:
                    events.append(frame)
                frame = {}
            elif line.startswith(":"):
                continue
            else:
                key, _, value = line.partition(":")
                frame[key] = value.strip()
    return [{"id": e.get("id"), "event": e["event"], "data": json.loads(e.get("data") or "{}")} for e in events]


def test_a_turn_streams_its_answer_and_lands_in_the_transcript(stack, model):
    model.on("capital of France", text("Paris is the capital of France.", chunk_delay=0.01))
    key = stack.create_user("e2e-basic")
    with stack.client(key) as c:
        session = c.post("/v1/sessions", json={}).json()
        turn = c.post(f"/v1/sessions/{session['id']}/turns", json={"input": "What is the capital of France?"})
        assert turn.status_code == 202
        events = read_sse(c, f"/v1/turns/{turn.json()['id']}/events")
        kinds = [e["event"] for e in events]
        assert kinds[0] == "turn.started" and kinds[-1] == "turn.completed"
        deltas = "".join(e["data"]["delta"] for e in events if e["event"] == "message.delta")
        assert deltas == "Paris is the capital of France."

        resumed = read_sse(c, f"/v1/turns/{turn.json()['id']}/events", headers={"Last-Event-ID": events[1]["id"]})
        assert [e["id"] for e in resumed] == [e["id"] for e in events[2:]]

        messages = c.get(f"/v1/sessions/{session['id']}/messages").json()["data"]
        assert [(m["role"], m["content"]) for m in messages] == [
            ("user", "What is the capital of France?"),
            ("assistant", "Paris is the capital of France."),
        ]


def read_posted_sse(client: httpx.Client, path: str, body: dict) -> tuple[httpx.Response, list[dict]]:
    """POST with `Accept: text/event-stream`: the response and every SSE frame until the server closes it."""
    events, frame = [], {}
    with client.stream("POST", path, json=body, headers={"Accept": "text/event-stream"}, timeout=30) as response:
        for line in response.iter_lines():
            if not line:
                if "event" in frame:
                    events.append(frame)
                frame = {}
            elif not line.startswith(":"):
                key, _, value = line.partition(":")
                frame[key] = value.strip()
    return response, [{"id": e.get("id"), "event": e["event"], "data": json.loads(e.get("data") or "{}")} for e in events]


def test_a_streaming_post_delivers_the_same_events_as_post_then_get_events(stack, model):
    """One request instead of two, and nothing lost or changed: the frames the POST streamed are the frames
    GET .../events replays for that turn, and a turn posted the JSON way with the same reply streams the same
    kinds and payloads."""
    script = [tool_call([("write_file", {"path": "s.txt", "content": "streamed"})]),
              text("Saved it, streaming.", chunk_delay=0.01)]
    model.on("stream-post-a", *script)
    model.on("stream-post-b", *script)
    key = stack.create_user("e2e-stream-post")
    with stack.client(key) as c:
        sid = c.post("/v1/sessions", json={}).json()["id"]
        response, streamed = read_posted_sse(c, f"/v1/sessions/{sid}/turns", {"input": "stream-post-a please"})
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        turn_id = response.headers["x-turn-id"]
        assert response.headers["location"] == f"/v1/turns/{turn_id}"
        replayed = read_sse(c, f"/v1/turns/{turn_id}/events")

        plain = c.post(f"/v1/sessions/{sid}/turns", json={"input": "stream-post-b please"})
        assert plain.status_code == 202
        followed = read_sse(c, f"/v1/turns/{plain.json()['id']}/events")
        row = c.get(f"/v1/turns/{turn_id}").json()

    assert streamed == replayed
    kinds = [e["event"] for e in streamed]
    assert kinds[0] == "turn.started" and kinds[-1] == "turn.completed" and "tool.completed" in kinds
    assert row["status"] == "completed" and streamed[-1]["data"]["output"] == row["output"] == "Saved it, streaming."

    def comparable(events: list[dict]) -> list[tuple]:
        """Kind and payload, without what differs between two turns by nature (ids, timings, usage)."""
        drop = {"turn_id", "id", "usage", "duration_ms", "elapsed_ms"}
        return [(e["event"], {k: v for k, v in e["data"].items() if k not in drop}) for e in events]

    assert comparable(streamed) == comparable(followed)


def test_twenty_turns_posted_at_once_to_one_session_run_in_order_without_overlap(stack, model):
    key = stack.create_user("e2e-order")
    with stack.client(key) as c:
        sid = c.post("/v1/sessions", json={}).json()["id"]
        with ThreadPoolExecutor(20) as pool:
            posted = list(pool.map(lambda i: c.post(f"/v1/sessions/{sid}/turns", json={"input": f"order-msg {i}"}).json(), range(20)))
        turns = sorted((wait_for_turn(c, t["id"], timeout=60) for t in posted), key=lambda t: t["seq"])

    assert [t["status"] for t in turns] == ["completed"] * 20
    assert [t["output"] for t in turns] == [f"You said: {t['input']}" for t in turns]
    for earlier, later in zip(turns, turns[1:]):
        assert earlier["finished_at"] <= later["started_at"], "two turns of one session overlapped"
    # Each model request saw every earlier exchange of the session: the turns really ran one after another.
    requests = [r.body for r in model.requests if "order-msg" in json.dumps(r.body)]
    user_inputs = [[m["content"] for m in body["messages"] if m["role"] == "user"] for body in requests]
    assert user_inputs == [[t["input"] for t in turns[: k + 1]] for k in range(20)]


def test_ten_sessions_run_at_once(stack, model):
    """Ten users' sessions (one user may run only MAX_RUNNING_TURNS_PER_USER turns at once)."""
    barrier = threading.Barrier(10, timeout=20)

    def all_ten_in_flight(body: dict) -> Reply:
        barrier.wait()  # only returns when ten requests are being served at the same time
        return text("together")

    model.on("overlap-check", *[all_ten_in_flight] * 10)
    clients = [stack.client(stack.create_user(f"e2e-overlap-{n}")) for n in range(10)]
    try:
        sids = [c.post("/v1/sessions", json={}).json()["id"] for c in clients]
        posted = [c.post(f"/v1/sessions/{sid}/turns", json={"input": "overlap-check"}).json()
                  for c, sid in zip(clients, sids)]
        finished = [wait_for_turn(c, t["id"], timeout=60) for c, t in zip(clients, posted)]
    finally:
        for c in clients:
            c.close()
    assert [t["output"] for t in finished] == ["together"] * 10


def kill_on_second_model_call(c: httpx.Client, model, doomed, tag: str) -> tuple[str, dict]:
    """Post a `tag` turn in a new session and SIGKILL the `doomed` worker once the turn's second model call is
    under way; the session id and the turn."""
    sid = c.post("/v1/sessions", json={}).json()["id"]
    turn = c.post(f"/v1/sessions/{sid}/turns", json={"input": f"{tag}: write a note"}).json()
    wait_until(lambda: sum(tag in json.dumps(r.body) for r in model.requests) >= 2,
               timeout=30, what="the second model call of the doomed turn")
    doomed.signal(signal.SIGKILL)
    doomed.popen.wait(10)
    return sid, turn


def test_a_worker_killed_mid_turn_has_its_turn_finished_by_another_without_duplicates(fake_model, model):
    stack = Stack(
        model_url=fake_model.base_url,
        env_overrides={
            "TURN_LEASE_SECONDS": "2",
            "TURN_HEARTBEAT_SECONDS": "0.3",
            "TURN_REQUEUE_AFTER_SECONDS": "1",
            "SWEEP_INTERVAL_SECONDS": "0.5",
        },
    )
    hang = text("never delivered", latency=120)
    model.on(
        "crash-test",
        tool_call([("write_file", {"path": "notes.txt", "content": "before the crash"})]),
        hang,
        text("Finished after the crash."),
    )
    with stack:
        stack.start_api()
        doomed = stack.start_worker("worker-a")
        key = stack.create_user("e2e-crash")
        with stack.client(key) as c:
            sid, turn = kill_on_second_model_call(c, model, doomed, "crash-test")

            stack.start_worker("worker-b")
            stack.start_curator()
            done = wait_for_turn(c, turn["id"], timeout=60)
            messages = c.get(f"/v1/sessions/{sid}/messages").json()["data"]

    assert done["status"] == "completed" and done["output"] == "Finished after the crash."
    roles = [m["role"] for m in messages]
    assert roles == ["user", "assistant", "tool", "assistant"], messages
    assert messages[1]["tool_calls"][0]["function"]["name"] == "write_file"
    assert messages[3]["content"] == "Finished after the crash."


def test_a_worker_killed_by_sigkill_has_its_turn_resumed_by_a_restarted_worker_long_before_its_lease(fake_model, model):
    """The lease is ten minutes and no curator runs, so only the dead-worker sweep can hand the turn on: the
    restarted worker on the same host sees the holder is gone, frees its lease and resumes the turn from its
    stored progress (the tool result is kept, the tool is not run again, the turn ran twice but never at once)."""
    stack = Stack(model_url=fake_model.base_url, env_overrides={"TURN_LEASE_SECONDS": "600"})
    model.on(
        "sigkill-test",
        tool_call([("write_file", {"path": "kept.txt", "content": "before the kill"})]),
        text("never delivered", latency=120),
        text("Finished after the kill."),
    )
    with stack:
        stack.start_api()
        doomed = stack.start_worker("worker")
        key = stack.create_user("e2e-sigkill")
        with stack.client(key) as c:
            sid, turn = kill_on_second_model_call(c, model, doomed, "sigkill-test")
            killed_at = time.monotonic()
            stack.start_worker("worker")  # what `hstack run` does a second after a crash
            done = wait_for_turn(c, turn["id"], timeout=120)
            messages = c.get(f"/v1/sessions/{sid}/messages").json()["data"]

    assert done["status"] == "completed" and done["output"] == "Finished after the kill."
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"], messages
    calls = [r for r in model.requests if "sigkill-test" in json.dumps(r.body)]
    assert len(calls) == 3 and calls[2].at > killed_at, "the resumed call came only after the holder was gone"


def test_turns_accepted_while_redis_restarts_are_not_lost(fake_model, model):
    stack = Stack(
        model_url=fake_model.base_url,
        own_redis=True,
        env_overrides={"TURN_REQUEUE_AFTER_SECONDS": "1", "SWEEP_INTERVAL_SECONDS": "0.5"},
    )
    with stack:
        stack.start_api()
        key = stack.create_user("e2e-redis")
        with stack.client(key) as c:
            sids = [c.post("/v1/sessions", json={}).json()["id"] for _ in range(5)]
            before = [c.post(f"/v1/sessions/{sid}/turns", json={"input": f"before restart {i}"}).json()
                      for i, sid in enumerate(sids)]
            stack.kill_redis()  # the queued task messages die with it: nothing was persisted
            during = [c.post(f"/v1/sessions/{sid}/turns", json={"input": f"while down {i}"})
                      for i, sid in enumerate(sids)]
            assert [r.status_code for r in during] == [202] * 5
            stack.start_redis()
            stack.start_worker()
            stack.start_curator()
            finished = [wait_for_turn(c, t["id"], timeout=60) for t in before + [r.json() for r in during]]
    assert [t["status"] for t in finished] == ["completed"] * 10
