"""Many event streams against one api: per-key caps, a bounded Redis fan-out, explicit stream ends."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from shared.messaging import events
from shared.stores import turns
from shared.stores.users import hash_key
from tests.services.api.helpers import frames_of
from tests.support.env import start_embedded_redis
from tests.support.factories import make_session, make_user
from tests.support.live import serve_api
from tests.support.waiting import wait_until

TTL = 60


async def read_stream(http: httpx.AsyncClient, path: str, headers: dict, opened: list | None = None) -> dict:
    """Open one stream and read it to its end: its status, headers and frames."""
    async with http.stream("GET", path, headers=headers) as response:
        if opened is not None:
            opened.append(response.status_code)
        lines = [line async for line in response.aiter_lines()]
    return {"status": response.status_code, "headers": response.headers, "frames": frames_of(lines)}


def subscribers(app, turn_id: str) -> int:
    """Streams of this turn the api's fan-out is serving right now."""
    found = app.state.hub.channels.get(turn_id)
    return len(found[0].subscribers) if found else 0


def api_redis_clients(redis_client, app, suffix: str = "") -> int:
    """Connections this api holds to Redis, from the server's own CLIENT LIST."""
    prefix = app.state.redis_name + suffix
    return sum(1 for client in redis_client.client_list() if client.get("name", "").startswith(prefix))


def publish_run(redis_client, turn_id: str) -> list[str]:
    return [
        events.publish(redis_client, turn_id, "turn.started", {}),
        events.publish(redis_client, turn_id, "message.delta", {"delta": "Hi"}),
        events.publish(redis_client, turn_id, "turn.completed", {"output": "Hi", "usage": {}}, ttl_seconds=TTL),
    ]


def new_turn(db, user):
    return turns.create_turn(db, user.id, make_session(db, user.id).id, "watch me")[0]


def api_with(settings, **changes):
    from services.api.main import create_app

    return create_app(settings.model_copy(update=changes))


def test_a_key_past_its_stream_cap_gets_429_while_another_users_stream_runs(settings, db, redis_client):
    """110 open SSE streams from one user exhausted the api's Redis pool (100 connections) and
    other users got empty event streams. Now one key may hold SSE_MAX_STREAMS_PER_KEY streams; the next
    is 429 too_many_streams with Retry-After, the other user's stream is untouched, and a closed stream
    gives its slot back."""
    noisy, quiet = make_user(db), make_user(db)
    noisy_turn, quiet_turn = new_turn(db, noisy), new_turn(db, quiet)
    app = api_with(settings, sse_max_streams_per_key=3)

    async def scenario(base: str):
        async with httpx.AsyncClient(base_url=base, timeout=30, limits=httpx.Limits(max_connections=20)) as http:
            held = [asyncio.create_task(read_stream(http, f"/v1/turns/{noisy_turn.id}/events", noisy.headers))
                    for _ in range(3)]
            await asyncio.to_thread(wait_until, lambda: subscribers(app, noisy_turn.id) == 3, 10,
                                    what="three streams of the noisy key")
            refused = await http.get(f"/v1/turns/{noisy_turn.id}/events", headers=noisy.headers)
            quiet_task = asyncio.create_task(read_stream(http, f"/v1/turns/{quiet_turn.id}/events", quiet.headers))
            await asyncio.to_thread(wait_until, lambda: subscribers(app, quiet_turn.id) == 1, 10,
                                    what="the quiet user's stream")
            ids = publish_run(redis_client, quiet_turn.id)
            quiet_result = await quiet_task
            publish_run(redis_client, noisy_turn.id)
            held_results = await asyncio.gather(*held)
            again = await read_stream(http, f"/v1/turns/{noisy_turn.id}/events", noisy.headers)
            return refused, quiet_result, ids, held_results, again

    with serve_api(app) as base:
        refused, quiet_result, ids, held_results, again = asyncio.run(scenario(base))
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "too_many_streams"
    assert int(refused.headers["retry-after"]) > 0
    assert [f["id"] for f in quiet_result["frames"]] == ids
    assert quiet_result["frames"][-1]["event"] == "turn.completed"
    assert all(r["frames"][-1]["event"] == "turn.completed" for r in held_results)
    assert again["status"] == 200 and again["frames"][-1]["event"] == "turn.completed"
    assert app.state.stream_slots.open_streams(hash_key(noisy.key)) == 0


def test_300_streams_on_one_turn_all_end_with_the_terminal_event_on_bounded_connections(
        settings, db, redis_client):
    """With 300 streams on one turn, 200 closed without a terminal event (one Redis connection per
    stream, pool of 100) and /readyz answered 503. Now one reader fans the turn out to every stream: all
    300 end with turn.completed, the api's Redis connections stay within its pools' caps, /readyz is 200."""
    user = make_user(db)
    turn = new_turn(db, user)
    app = api_with(settings, sse_max_streams_per_key=400)
    limits = httpx.Limits(max_connections=400, max_keepalive_connections=400)

    async def scenario(base: str):
        async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as http:
            streams = [asyncio.create_task(read_stream(http, f"/v1/turns/{turn.id}/events", user.headers))
                       for _ in range(300)]
            await asyncio.to_thread(wait_until, lambda: subscribers(app, turn.id) == 300, 60,
                                    what="300 subscribers on the turn")
            ready = await http.get("/readyz")
            counts = (api_redis_clients(redis_client, app), api_redis_clients(redis_client, app, ":sse"))
            publish_run(redis_client, turn.id)
            return await asyncio.gather(*streams), ready, counts

    with serve_api(app) as base:
        results, ready, (total, sse) = asyncio.run(scenario(base))
    print(f"api redis connections with 300 open streams: {total} in all, {sse} for streams")
    assert [r["status"] for r in results] == [200] * 300
    assert all(r["frames"] and r["frames"][-1]["event"] == "turn.completed" for r in results)
    assert all(len(r["frames"]) == 3 for r in results)
    assert ready.status_code == 200
    assert sse <= settings.sse_redis_connections
    assert total <= settings.sse_redis_connections + settings.api_redis_connections + 2


@pytest.mark.parametrize("how", ["header", "query"])
def test_a_last_event_id_beyond_redis_range_is_422(client, db, user, how):
    """`Last-Event-ID: 99999999999999999999-0` (more than 2^64-1) answered an empty 200 stream.
    Now it is 422 invalid_last_event_id, from the header and from the last_event_id query parameter."""
    turn = new_turn(db, user)
    headers, params = dict(user.headers), {}
    if how == "header":
        headers["Last-Event-ID"] = "99999999999999999999-0"
    else:
        params["last_event_id"] = "1-18446744073709551616"
    response = client.get(f"/v1/turns/{turn.id}/events", headers=headers, params=params)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_last_event_id"


def test_the_largest_event_id_redis_allows_is_accepted(client, db, user, redis_client):
    turn = new_turn(db, user)
    publish_run(redis_client, turn.id)
    headers = {**user.headers, "Last-Event-ID": f"{turn_id_ms(redis_client, turn.id)}-18446744073709551615"}
    with client.stream("GET", f"/v1/turns/{turn.id}/events", headers=headers) as response:
        assert response.status_code == 200


def turn_id_ms(redis_client, turn_id: str) -> int:
    last = redis_client.xrevrange(events.stream_key(turn_id), count=1)[0][0]
    return int(last.split("-")[0])


def test_a_stream_whose_redis_dies_ends_with_an_error_event(settings, db, user, tmp_data_dir):
    """A stream whose Redis connection broke just stopped (no terminal event, no error), so the
    client could not tell a finished turn from a broken stream. Now it ends with `event: error`, code
    stream_unavailable, whose id is the last event delivered: the Last-Event-ID to resume from."""
    import redis

    url, proc = start_embedded_redis(tmp_data_dir)
    private = redis.Redis.from_url(url, decode_responses=True)
    turn = new_turn(db, user)
    app = api_with(settings, redis_url=url)
    try:
        with serve_api(app) as base, httpx.Client(base_url=base, timeout=30) as http:
            with http.stream("GET", f"/v1/turns/{turn.id}/events", headers=user.headers) as response:
                wait_until(lambda: subscribers(app, turn.id) == 1, 10, what="the stream's subscription")
                started = events.publish(private, turn.id, "turn.started", {})
                lines = response.iter_lines()
                first = [next(lines) for _ in range(4)]
                proc.kill()
                proc.wait(10)
                rest = list(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert frames_of(first)[0]["id"] == started
    frames = frames_of(rest)
    assert frames[-1]["event"] == "error"
    assert frames[-1]["data"]["code"] == "stream_unavailable"
    assert frames[-1]["id"] == started


def test_a_chat_completion_under_stream_pressure_answers_200(settings, db, redis_client, model):
    """While one user held 110+ streams, a chat completion answered 503 (the Redis pool was
    exhausted) although its turn had been accepted and still ran, so a retry would run it twice. Now
    the streams share the fan-out's few connections and the completion answers 200 with the output."""
    from shared.queue.app import enqueue
    from tests.fakes.model import text
    from tests.support.worker import inprocess_worker

    noisy, caller = make_user(db), make_user(db)
    noisy_turn = new_turn(db, noisy)
    app = api_with(settings, sse_max_streams_per_key=200)
    app.state.enqueue = enqueue
    model.on("pressure", text("Still answering."))
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)

    async def scenario(base: str):
        async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as http:
            streams = [asyncio.create_task(read_stream(http, f"/v1/turns/{noisy_turn.id}/events", noisy.headers))
                       for _ in range(150)]
            await asyncio.to_thread(wait_until, lambda: subscribers(app, noisy_turn.id) == 150, 60,
                                    what="150 streams of the noisy user")
            completion = await http.post("/v1/chat/completions", headers=caller.headers, json={
                "model": "scripted", "messages": [{"role": "user", "content": "under pressure?"}]})
            publish_run(redis_client, noisy_turn.id)
            await asyncio.gather(*streams)
            return completion

    with inprocess_worker(), serve_api(app) as base:
        completion = asyncio.run(scenario(base))
    assert completion.status_code == 200, completion.text
    assert completion.json()["choices"][0]["message"]["content"] == "Still answering."


def test_a_chat_completion_whose_event_stream_is_unreadable_waits_on_the_turn_row(
        settings, db, model, tmp_data_dir):
    """When the api could not read Redis while a chat completion waited, it answered 503 although
    its turn had been accepted and went on running. Now the wait falls back to the turn's row: the api's
    Redis is dead here (the worker's is fine) and the completion still answers 200 with the output."""
    from shared.queue.app import enqueue
    from tests.fakes.model import text
    from tests.support.worker import inprocess_worker

    url, proc = start_embedded_redis(tmp_data_dir)
    proc.kill()
    proc.wait(10)
    app = api_with(settings, redis_url=url)
    app.state.enqueue = enqueue
    caller = make_user(db)
    model.on("unreadable", text("Answered from the row."))
    with inprocess_worker(), serve_api(app) as base:
        completion = httpx.post(f"{base}/v1/chat/completions", headers=caller.headers, timeout=60, json={
            "model": "scripted", "messages": [{"role": "user", "content": "unreadable events?"}]})
    assert completion.status_code == 200, completion.text
    assert completion.json()["choices"][0]["message"]["content"] == "Answered from the row."
    assert turns.get_turn(db, caller.id, completion.headers["x-turn-id"]).status == "completed"


def test_sigterm_ends_open_streams_with_an_error_event_and_the_api_exits(db, user, redis_client, tmp_data_dir):
    """On a graceful stop uvicorn waits for open responses, so an open event stream either held the
    api up or was cut without a word. Now SIGTERM ends every stream with `event: error` (shutting_down,
    id = the last event delivered, to resume from) and the api exits."""
    import os
    import signal
    import subprocess
    import sys

    from tests.support.env import free_port

    turn = new_turn(db, user)
    port = free_port()
    log = (tmp_data_dir / "api.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "--factory", "services.api.main:create_app",
                             "--host", "127.0.0.1", "--port", str(port)],
                            env=dict(os.environ), stdout=log, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: _answers(f"{base}/healthz"), 20, what="the api subprocess")
        with httpx.Client(base_url=base, timeout=20) as http:
            with http.stream("GET", f"/v1/turns/{turn.id}/events", headers=user.headers) as response:
                lines = response.iter_lines()
                started = events.publish(redis_client, turn.id, "turn.started", {})
                first = [next(lines) for _ in range(4)]
                proc.send_signal(signal.SIGTERM)
                rest = list(lines)
        assert proc.wait(20) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it handled
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
    assert frames_of(first)[0]["id"] == started
    end = frames_of(rest)[-1]
    assert end["event"] == "error" and end["data"]["code"] == "shutting_down" and end["id"] == started


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
