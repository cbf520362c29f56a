"""Deleting a session while its turn runs, with the real api, worker and Redis: the turn stops first."""

from __future__ import annotations

import redis
import pytest

from shared.messaging import events
from tests.fakes.model import text
from tests.support.processes import Stack, wait_for_turn, wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(fake_model):
    s = Stack(model_url=fake_model.base_url)
    with s:
        s.start_api()
        s.start_worker()
        yield s


def test_deleting_a_session_mid_turn_stops_the_turn_and_leaves_nothing_behind(stack, model):
    """Reproduction: with the rows deleted under the running turn, its worker found the turn gone mid-run
    ("turn finished elsewhere: this worker lost its lease"); now the turn is cancelled and its worker has
    ended it before the rows go."""
    model.on("tell me a long tale", text("once " * 400, chunk_delay=0.05))
    model.on("short one", text("Done."))
    key = stack.create_user("e2e-forget")
    streams = redis.Redis.from_url(stack.redis_url, decode_responses=True)
    with stack.client(key) as c:
        sid = c.post("/v1/sessions", json={}).json()["id"]
        turn = c.post(f"/v1/sessions/{sid}/turns", json={"input": "tell me a long tale"}).json()
        wait_until(lambda: streams.xlen(events.stream_key(turn["id"])) > 2, timeout=30, what="the tale streaming")

        deleted = c.delete(f"/v1/sessions/{sid}")

        assert deleted.status_code == 200, deleted.text
        assert deleted.json()["turns"] == 1
        assert c.get(f"/v1/turns/{turn['id']}").status_code == 404
        other = c.post("/v1/sessions", json={}).json()["id"]
        after = c.post(f"/v1/sessions/{other}/turns", json={"input": "short one"}).json()
        assert wait_for_turn(c, after["id"])["output"] == "Done."  # the worker is well and took the next turn
    assert not streams.exists(events.stream_key(turn["id"]))
    logs = stack.logs()
    assert "IntegrityError" not in logs and "ForeignKeyViolation" not in logs
    assert "lost its lease" not in logs, "the worker ended the turn itself, as cancelled, before the rows went"
