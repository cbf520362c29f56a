"""`make bench`: one user's backlog against another user's single turn, on one worker process.

User A posts BACKLOG turns (one session each), then user B posts one; B's latency (POST → completed)
is printed with and without A's backlog, with the per-user cap on and off (MAX_RUNNING_TURNS_PER_USER=0,
the behaviour before the cap). Real api and worker, scripted model; asserts nothing.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

os.environ.setdefault("TEST_DATABASE", "sqlite")
from tests.support import env as test_env  # noqa: E402  (fixes the environment before Settings are read)

ENV = test_env.prepare()

from tests.fakes.model import FakeModel  # noqa: E402
from tests.support.processes import Stack, wait_until  # noqa: E402

BACKLOG = 200
CONCURRENCY = 16
MODEL_SECONDS = 0.2
SAMPLES = 5


def single_turn_seconds(c) -> float:
    """POST one turn in a new session and wait until it completed."""
    sid = c.post("/v1/sessions", json={}).json()["id"]
    start = time.perf_counter()
    turn = c.post(f"/v1/sessions/{sid}/turns", json={"input": "just one"}).json()
    wait_until(lambda: c.get(f"/v1/turns/{turn['id']}").json()["status"] == "completed", timeout=600,
               interval=0.01, what="B's turn")
    return time.perf_counter() - start


def post_backlog(c) -> None:
    sids = [c.post("/v1/sessions", json={}).json()["id"] for _ in range(BACKLOG)]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda s: c.post(f"/v1/sessions/{s}/turns", json={"input": "backlog"}), sids))


def measure(model: FakeModel, cap: int) -> dict:
    """B's median latency alone, then right after A's backlog, on a fresh stack with this cap."""
    stack = Stack(model_url=model.base_url, env_overrides={"LOG_LEVEL": "WARNING",
                                                           "MAX_RUNNING_TURNS_PER_USER": str(cap)})
    try:
        stack.start_api()
        stack.start_worker(concurrency=CONCURRENCY)
        with stack.client(stack.create_user("noisy")) as a, stack.client(stack.create_user("quiet")) as b:
            alone = statistics.median(single_turn_seconds(b) for _ in range(SAMPLES))
            post_backlog(a)
            behind = single_turn_seconds(b)
        return {"cap": cap, "alone_s": alone, "behind_backlog_s": behind}
    finally:
        stack.stop()


def main() -> int:
    model = FakeModel(port=ENV.model_port)
    model.start()
    model.latency = MODEL_SECONDS
    try:
        print(f"Fairness: user B's one turn while user A has {BACKLOG} turns queued "
              f"(one worker, {CONCURRENCY} threads, {MODEL_SECONDS:.1f} s per model reply)\n")
        results = [measure(model, cap) for cap in (4, 0)]
        for r in results:
            label = f"cap {r['cap']} per user" if r["cap"] else "no cap (before)"
            print(f"  {label:<18} B alone {r['alone_s']:.2f} s   B behind A's backlog {r['behind_backlog_s']:.2f} s   "
                  f"(ratio {r['behind_backlog_s'] / r['alone_s']:.1f}x; one turn = {MODEL_SECONDS:.1f} s)")
        print("\n" + json.dumps(results))
        return 0
    finally:
        model.stop()
        ENV.close()


if __name__ == "__main__":
    sys.exit(main())
