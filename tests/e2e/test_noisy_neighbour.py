"""One user holding 300 open event streams and 200 queued turns does not starve another user's turn."""

from __future__ import annotations

import pytest

from tests.support.noisy import StreamHold, keys_for, queue_backlog, stream_one_turn
from tests.support.processes import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.once]  # process behaviour: see tests/conftest.py

STREAMS = 300
BACKLOG = 200
KEYS = 13  # 13 keys x SSE_MAX_STREAMS_PER_KEY (24) >= 300 streams


def test_a_quiet_users_turn_streams_normally_beside_a_noisy_neighbour(fake_model, model):
    """Reproduction: 110 open SSE streams from one user exhausted the api's Redis pool, so other
    users got empty event streams and /readyz answered 503; and one user's burst of turns filled the only
    worker, so everyone else's turns waited behind it. Here user A holds 300 open streams (spread over 13 keys
    to stay within the per-key cap) on 200 queued turns, and user B's single turn must still stream every event
    to `turn.completed` with the model's answer."""
    model.latency = 0.1
    with Stack(model_url=fake_model.base_url) as stack:
        stack.start_api()
        stack.start_worker(concurrency=8)
        noisy = keys_for(stack, "e2e-noisy", KEYS)
        [quiet] = keys_for(stack, "e2e-quiet", 1)
        backlog = queue_backlog(stack, noisy[0], BACKLOG)

        with StreamHold(stack, noisy, backlog, STREAMS) as hold:
            assert hold.open_streams == STREAMS, dict(hold.statuses)
            seen = stream_one_turn(stack, quiet, "hello from the quiet user")
            with stack.client() as admin:
                assert admin.get("/readyz").status_code == 200

        assert seen.events[0] == "turn.started" and seen.events[-1] == "turn.completed", seen.events
        assert "message.delta" in seen.events
        assert "hello from the quiet user" in seen.output
