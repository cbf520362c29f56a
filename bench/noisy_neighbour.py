"""`make bench`: a quiet user's turn, streamed over SSE, alone and beside a noisy neighbour.

The neighbour holds 300 open event streams (13 keys, within the per-key cap) on 200 queued turns.
Prints the quiet user's POST → `turn.completed` latency both ways (median of SAMPLES) and the ratio.
Real api and worker (one process, 8 threads), scripted model; asserts nothing.
"""

from __future__ import annotations

import json
import os
import statistics
import sys

os.environ.setdefault("TEST_DATABASE", "sqlite")
from tests.support import env as test_env  # noqa: E402  (fixes the environment before Settings are read)

ENV = test_env.prepare()

from tests.fakes.model import FakeModel  # noqa: E402
from tests.support.noisy import StreamHold, keys_for, queue_backlog, stream_one_turn  # noqa: E402
from tests.support.processes import Stack  # noqa: E402

STREAMS = 300
BACKLOG = 200
KEYS = 13
MODEL_SECONDS = 0.1
SAMPLES = 5


def median_seconds(stack: Stack, key: str) -> float:
    return statistics.median(stream_one_turn(stack, key).seconds for _ in range(SAMPLES))


def main() -> int:
    model = FakeModel(port=ENV.model_port).start()
    model.latency = MODEL_SECONDS
    try:
        with Stack(model_url=model.base_url, env_overrides={"LOG_LEVEL": "WARNING"}) as stack:
            stack.start_api()
            stack.start_worker(concurrency=8)
            [quiet] = keys_for(stack, "quiet", 1)
            alone = median_seconds(stack, quiet)
            noisy = keys_for(stack, "noisy", KEYS)
            backlog = queue_backlog(stack, noisy[0], BACKLOG)
            with StreamHold(stack, noisy, backlog, STREAMS) as hold:
                beside = median_seconds(stack, quiet)
                opened = hold.open_streams
        print(f"Noisy neighbour: user A holds {opened} open streams on {BACKLOG} queued turns; "
              f"user B streams one turn ({MODEL_SECONDS:.1f} s model, one worker, 8 threads)\n")
        print(f"  B alone            {alone * 1000:7.0f} ms (median of {SAMPLES})")
        print(f"  B beside A         {beside * 1000:7.0f} ms (median of {SAMPLES})   ratio {beside / alone:.2f}x")
        print("\n" + json.dumps({"alone_s": alone, "beside_noisy_s": beside, "open_streams": opened}))
        return 0
    finally:
        model.stop()
        ENV.close()


if __name__ == "__main__":
    sys.exit(main())
