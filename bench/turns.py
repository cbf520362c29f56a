"""`make bench`: turn overhead, concurrency of one worker, RSS per service, worker cold start.

Runs the real processes (api, worker) against the scripted model; prints figures and ratios to
the targets, asserts nothing.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import psutil

os.environ.setdefault("TEST_DATABASE", "sqlite")
from tests.support import env as test_env  # noqa: E402  (fixes the environment before Settings are read)

ENV = test_env.prepare()

from bench import anchor_run  # noqa: E402
from bench.report import figure, summary  # noqa: E402
from tests.fakes.model import FakeModel  # noqa: E402
from tests.support.processes import Stack, wait_until  # noqa: E402

TARGETS = {"overhead_p50_ms": 15.0, "in_flight": 100, "rss_mb": 1024.0, "cold_start_s": 2.0, "sessions_200_s": 3.0,
           "anchor_ratio": 0.25, "first_call_kb": 15.0}
MODEL_SECONDS = 2.0
POST_THREADS = 64
POLL_SECONDS = 0.05
ANCHOR_TURNS = 30


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered)) - 1))
    return ordered[index]


def run_to_completion(c: httpx.Client, sid: str, text: str) -> float:
    """POST a turn and follow its SSE stream to turn.completed; seconds elapsed."""
    start = time.perf_counter()
    turn = c.post(f"/v1/sessions/{sid}/turns", json={"input": text}).json()
    with c.stream("GET", f"/v1/turns/{turn['id']}/events") as response:
        for line in response.iter_lines():
            if line.startswith("event: turn."):
                kind = line.split(": ", 1)[1]
                if kind in ("turn.completed", "turn.failed", "turn.cancelled"):
                    if kind != "turn.completed":
                        raise RuntimeError(f"turn ended with {kind}")
                    break
    return time.perf_counter() - start


def bench_overhead(stack: Stack, key: str, n: int = 200) -> dict:
    with stack.client(key) as c:
        sid = c.post("/v1/sessions", json={}).json()["id"]
        for i in range(10):  # warm up connections and caches
            run_to_completion(c, sid, f"warm {i}")
        sid = c.post("/v1/sessions", json={}).json()["id"]
        samples = [run_to_completion(c, sid, f"overhead {i}") * 1000 for i in range(n)]
    return {"p50_ms": statistics.median(samples), "p99_ms": percentile(samples, 99), "n": n}


def bench_concurrency(stack: Stack, model: FakeModel, key: str, sessions: int) -> dict:
    """N new sessions each POST one turn at once (a 2 s model); seconds until the client saw every turn completed.

    The client waits the way a light client would: it asks only about turns it has not yet seen completed,
    oldest first, and stops at the first one still running, so the waiting itself costs the api a handful of
    GETs per poll (it used to GET all N turns every 0.25 s, which at N=200 was a load of its own on the api).
    """
    model.reset()
    model.latency = MODEL_SECONDS
    with stack.client(key) as c:
        sids = [c.post("/v1/sessions", json={}).json()["id"] for _ in range(sessions)]
        start, arrival_base = time.perf_counter(), time.monotonic()
        with ThreadPoolExecutor(min(POST_THREADS, sessions)) as pool:
            turns = list(pool.map(lambda s: c.post(f"/v1/sessions/{s}/turns", json={"input": "load"}).json(), sids))
        accepted = time.perf_counter() - start
        pending = [t["id"] for t in turns]

        def all_done() -> bool:
            while pending:
                status = c.get(f"/v1/turns/{pending[0]}").json()["status"]
                if status in ("failed", "cancelled"):
                    raise RuntimeError(f"a concurrent turn ended {status}")
                if status != "completed":
                    return False
                pending.pop(0)
            return True

        wait_until(all_done, timeout=300, interval=POLL_SECONDS, what="every concurrent turn")
        elapsed = time.perf_counter() - start
    arrivals = [r.at - arrival_base for r in model.requests if r.path == "/v1/chat/completions"]
    model.latency = 0.0
    return {"sessions": sessions, "seconds": elapsed, "turns_per_s": sessions / elapsed, "accepted_s": accepted,
            "last_model_call_s": max(arrivals) if arrivals else None, "max_in_flight": model.max_in_flight}


def report_concurrency(results: list[dict]) -> None:
    print(f"\none worker process, {MODEL_SECONDS:.0f} s model, N new sessions post a turn at once "
          f"({POST_THREADS} client threads):")
    for r in results:
        target = TARGETS["sessions_200_s"] if r["sessions"] == 200 else None
        figure(f"{r['sessions']} sessions at once, first POST → all seen completed", r["seconds"], "s",
               target=target, digits=2,
               note=f"all accepted {r['accepted_s']:.2f} s, last model call began {r['last_model_call_s']:.2f} s, "
                    f"{r['turns_per_s']:.1f} turns/s, max {r['max_in_flight']} calls in flight")
    carried = max(r["max_in_flight"] for r in results)
    figure("turns one worker carries at once (model calls in flight)", carried, "", target=TARGETS["in_flight"],
           better="higher", digits=0)


def report_anchor(model: FakeModel, overhead: dict) -> dict | None:
    """The anchor's in-process turn beside ours through api+worker+SSE, as a ratio; a skip line when not installed."""
    print()
    if not anchor_run.installed():
        print(anchor_run.skip_line())
        return None
    try:
        anchor = anchor_run.run_anchor(model, ANCHOR_TURNS)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"anchor: failed, no ratio this run: {exc}")
        return None
    print(f"anchor: hermes-agent {anchor_run.anchor_version()} in-process (AIAgent.run_conversation, no HTTP api), "
          f"ours through api + worker + SSE; the same instant scripted model; anchor {anchor.n} turns of one "
          f"conversation, ours {overhead['n']} turns of one session")
    figure("anchor turn, in-process, p50", anchor.p50_ms, "ms", note=f"p99 {anchor.p99_ms:.1f} ms")
    figure("our overhead / anchor overhead (p50)", overhead["p50_ms"] / anchor.p50_ms, "x",
           target=TARGETS["anchor_ratio"], digits=2,
           note=f"ours {overhead['p50_ms']:.1f} ms / anchor {anchor.p50_ms:.1f} ms")
    figure("anchor request bytes, first model call", anchor.first_call_bytes / 1000, "KB",
           note=f"median over its {anchor.calls} turn calls {anchor.median_call_bytes / 1000:.1f} KB")
    return {"p50_ms": anchor.p50_ms, "p99_ms": anchor.p99_ms, "n": anchor.n,
            "first_call_bytes": anchor.first_call_bytes, "median_call_bytes": anchor.median_call_bytes}


def our_first_call_bytes(stack: Stack, model: FakeModel, key: str) -> int:
    """Bytes of the first model request of a new session (empty memory), as the scripted model received it."""
    model.reset()
    with stack.client(key) as c:
        sid = c.post("/v1/sessions", json={}).json()["id"]
        run_to_completion(c, sid, "first call bytes")
    sizes = anchor_run.request_bytes(model.requests)
    return sizes[0] if sizes else 0


def rss_mb(pid: int) -> float:
    proc = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / 2**20


def bench_cold_start(stack: Stack) -> float:
    start = time.perf_counter()
    proc = stack.start_worker("coldstart")
    elapsed = time.perf_counter() - start
    proc.stop()
    return elapsed


def main() -> int:
    model = FakeModel(port=ENV.model_port)
    model.start()
    stack = Stack(model_url=model.base_url, env_overrides={"LOG_LEVEL": "WARNING", "WORKER_CONCURRENCY": "200",
                                                            # one user's load measures the worker, not the per-user cap
                                                            "MAX_RUNNING_TURNS_PER_USER": "0"})
    try:
        api = stack.start_api()
        worker = stack.start_worker(concurrency=200)
        reviewer = stack.start_worker("reviewer", queue="review", concurrency=50)
        curator = stack.start_curator()
        key = stack.create_user("bench")
        print("Hermes Stack turn benchmark (real api + one worker process, scripted model over HTTP)\n")

        overhead = bench_overhead(stack, key)
        print(f"turn overhead, POST → turn.completed, {overhead['n']} sequential turns, instant model:")
        print(f"  p50 {overhead['p50_ms']:.1f} ms   p99 {overhead['p99_ms']:.1f} ms   "
              f"(target p50 ≤ {TARGETS['overhead_p50_ms']:.0f} ms: ratio {overhead['p50_ms'] / TARGETS['overhead_p50_ms']:.2f})")

        anchor = report_anchor(model, overhead)
        ours_bytes = our_first_call_bytes(stack, model, key)
        figure("our request bytes, first call of a new session, empty memory", ours_bytes / 1000, "KB",
               target=TARGETS["first_call_kb"])

        results = [bench_concurrency(stack, model, key, n) for n in (10, 100, 200)]
        report_concurrency(results)

        procs = {"api": api, "worker": worker, "reviewer": reviewer, "curator": curator}
        rss = {name: rss_mb(p.popen.pid) for name, p in procs.items()}
        print("\nRSS after load:")
        for name, mb in rss.items():
            print(f"  {name:<8} {mb:7.1f} MB")
        total = sum(rss.values())
        print(f"  total    {total:7.1f} MB (Redis not counted; target all services ≤ {TARGETS['rss_mb']:.0f} MB)")

        cold = bench_cold_start(stack)
        print(f"\nworker cold start (spawn → ready and announced): {cold:.2f} s "
              f"(target ≤ {TARGETS['cold_start_s']:.0f} s: ratio {cold / TARGETS['cold_start_s']:.2f})")
        summary()
        print("\n" + json.dumps({"overhead": overhead, "anchor": anchor, "first_call_bytes": ours_bytes,
                                 "concurrency": results, "rss_mb": rss, "cold_start_s": cold}))
        return 0
    finally:
        stack.stop()
        model.stop()
        ENV.close()


if __name__ == "__main__":
    sys.exit(main())
