"""`make bench`: delegate_task with three children whose model takes 1 s each, on the real processes.

One api and one worker (thread pool, 4 threads) on SQLite; the parent's own two model calls answer at once.
Prints the wall time from accepting the parent's turn to its answer (median of RUNS), what three children in a
row would take at least (3 x 1 s), and the overhead over one child's second (parking, the children's turns on the
queue, the parent's resume). Asserts nothing.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

os.environ.setdefault("TEST_DATABASE", "sqlite")
from tests.support import env as test_env  # noqa: E402  (fixes the environment before Settings are read)

ENV = test_env.prepare()

from tests.fakes.model import FakeModel, text, tool_call  # noqa: E402
from tests.support.processes import Stack, wait_for_turn  # noqa: E402

RUNS = 5
CHILDREN = 3
CHILD_SECONDS = 1.0


def one_run(stack: Stack, model: FakeModel, key: str, n: int) -> float:
    """Seconds from the parent's POST to its completed answer."""
    goals = [f"bench {n} child {i}" for i in range(CHILDREN)]
    model.on(f"bench parent {n}", tool_call([("delegate_task", {"tasks": [{"goal": g} for g in goals]})]),
             text("done"))
    for goal in goals:
        model.on(goal, text(f"{goal} finished", latency=CHILD_SECONDS))
    with stack.client(key) as c:
        session = c.post("/v1/sessions", json={}).raise_for_status().json()
        start = time.perf_counter()
        turn = c.post(f"/v1/sessions/{session['id']}/turns", json={"input": f"bench parent {n}"}).json()
        done = wait_for_turn(c, turn["id"], timeout=120)
        elapsed = time.perf_counter() - start
    if done["status"] != "completed":
        raise RuntimeError(f"run {n} ended {done['status']}: {done.get('error')}")
    return elapsed


def main() -> int:
    model = FakeModel(port=ENV.model_port)
    model.start()
    overrides = {"RATE_LIMIT_PER_MINUTE": "0", "TURN_RATE_LIMIT_PER_MINUTE": "0",
                 "DELEGATE_MAX_CHILDREN": str(CHILDREN)}
    try:
        with Stack(model_url=model.base_url, env_overrides=overrides) as stack:
            stack.start_api()
            stack.start_worker(concurrency=4)
            key = stack.create_user("bench-delegate")
            one_run(stack, model, key, 0)  # warm-up: imports, connections, the first session's prompt
            times = [one_run(stack, model, key, n) for n in range(1, RUNS + 1)]
    finally:
        model.stop()
        ENV.close()
    median = statistics.median(times)
    print(f"delegate_task, {CHILDREN} children x {CHILD_SECONDS:g} s model, one worker (4 threads), {RUNS} runs")
    print(f"  parent turn wall time: median {median:.2f} s  (min {min(times):.2f}, max {max(times):.2f})")
    print(f"  children in a row would take at least {CHILDREN * CHILD_SECONDS:.2f} s; "
          f"ratio {median / (CHILDREN * CHILD_SECONDS):.2f}")
    print(f"  overhead over one child's {CHILD_SECONDS:g} s: {median - CHILD_SECONDS:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
