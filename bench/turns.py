"""`make bench`: turn overhead, concurrency of one worker, RSS per service, worker cold start.

Runs the real processes (api, worker) against the scripted model; prints figures and ratios to
the targets, asserts nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time

import httpx
import psutil

os.environ.setdefault("TEST_DATABASE", "sqlite")
from tests.support import env as test_env  # noqa: E402  (fixes the environment before Settings are read)

ENV = test_env.prepare()

from bench import anchor_run  # noqa: E402
from bench.burst import TEXT as BURST_TEXT, burst  # noqa: E402
from bench.report import figure, summary  # noqa: E402
from bench.model_process import ModelProcess  # noqa: E402
from bench.review_model import is_review  # noqa: E402
from services.demo_model.replies import latest_user_text  # noqa: E402
from tests.fakes.model import FakeModel  # noqa: E402
from tests.support.processes import Stack, wait_until  # noqa: E402

TARGETS = {"in_flight": 100, "rss_mb": 1024.0, "cold_start_s": 2.0, "sessions_200_s": 3.0,
           "anchor_ratio": 0.25, "first_call_kb": 15.0,
           "overhead_p50_ms_sqlite": 12.0, "overhead_p50_ms_postgres": 15.0, "overhead_p99_ms": 25.0,
           "first_delta_ms": 8.0, "growth_ratio": 1.2, "recall_added_ms": 5.0, "worker_cpu_ms": 15.0}
CPU_TURNS = int(os.environ.get("BENCH_CPU_TURNS", "200"))
PROBE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe")
GROWTH_TURNS = int(os.environ.get("BENCH_GROWTH_TURNS", "500"))
HISTORY_MESSAGES = int(os.environ.get("BENCH_HISTORY_MESSAGES", "100000"))
MODEL_SECONDS = 2.0
ANCHOR_TURNS = 30
Model = FakeModel | ModelProcess  # the scripted model in this process or, for the timed figures, in its own


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered)) - 1))
    return ordered[index]


def run_to_completion(c: httpx.Client, sid: str, text: str) -> float:
    """POST a turn and follow its SSE stream to turn.completed; seconds elapsed."""
    return stages_of_turn(c, sid, text)["completed"] / 1000


def stages_of_turn(c: httpx.Client, sid: str, text: str) -> dict[str, float]:
    """POST a turn and follow its SSE stream to the end; ms from the POST to each milestone.

    `accepted`: the 202 came back; `started`: turn.started arrived over SSE; `first_delta`: the first
    message.delta; `completed`: turn.completed. All on the monotonic clock the scripted model stamps its
    requests with, so `model_request` (added by the caller) lines up with them.
    """
    start = time.monotonic()
    out: dict[str, float] = {"t0": start}
    turn = c.post(f"/v1/sessions/{sid}/turns", json={"input": text}).json()
    out["accepted"] = (time.monotonic() - start) * 1000
    with c.stream("GET", f"/v1/turns/{turn['id']}/events") as response:
        _stamp_events(response, start, out)
    return out


def stages_of_streamed_turn(c: httpx.Client, sid: str, text: str) -> dict[str, float]:
    """`stages_of_turn` through one request: POST with `Accept: text/event-stream`, the events in its response.

    `accepted`: the response's headers came back (the turn was committed and sent)."""
    start = time.monotonic()
    out: dict[str, float] = {"t0": start}
    with c.stream("POST", f"/v1/sessions/{sid}/turns", json={"input": text},
                  headers={"Accept": "text/event-stream"}) as response:
        out["accepted"] = (time.monotonic() - start) * 1000
        _stamp_events(response, start, out)
    return out


def _stamp_events(response: httpx.Response, start: float, out: dict[str, float]) -> None:
    """ms from `start` to the stream's first turn.started and message.delta, and to its turn.completed."""
    for line in response.iter_lines():
        if not line.startswith("event: "):
            continue
        kind = line.split(": ", 1)[1]
        at = (time.monotonic() - start) * 1000
        if kind == "turn.started":
            out.setdefault("started", at)
        elif kind == "message.delta":
            out.setdefault("first_delta", at)
        elif kind in ("turn.completed", "turn.failed", "turn.cancelled"):
            if kind != "turn.completed":
                raise RuntimeError(f"turn ended with {kind}")
            out["completed"] = at
            return


def timed_turns(c: httpx.Client, model: Model | None, sid: str, texts: list[str],
                streamed: bool = False) -> list[dict[str, float]]:
    """Stages of each turn, with `model_request`: ms from the POST until the model received the call.
    `streamed`: through the streaming POST instead of POST + GET events."""
    samples = []
    for text in texts:
        seen = model.request_count() if model is not None else 0
        stages = (stages_of_streamed_turn if streamed else stages_of_turn)(c, sid, text)
        if model is not None:
            calls = model.requests_since(seen)
            if calls:
                stages["model_request"] = (calls[0].at - stages["t0"]) * 1000
        samples.append(stages)
    return samples


def median_of(samples: list[dict[str, float]], key: str) -> float:
    values = [s[key] for s in samples if key in s]
    return statistics.median(values) if values else float("nan")


def bench_overhead(stack: Stack, key: str, n: int = int(os.environ.get("BENCH_OVERHEAD_TURNS", "200")),
                   model: Model | None = None, streamed: bool = False) -> dict:
    """Sequential instant-model turns in one fresh session: p50/p99 of POST → turn.completed, and the stages.
    `streamed`: each turn through the streaming POST (one request) instead of POST + GET events."""
    with stack.client(key) as c:
        sid = c.post("/v1/sessions", json={}).json()["id"]
        timed_turns(c, model, sid, [f"warm {i}" for i in range(10)], streamed)  # warm up connections and caches
        sid = c.post("/v1/sessions", json={}).json()["id"]
        samples = timed_turns(c, model, sid, [f"overhead {i}" for i in range(n)], streamed)
    return summarise(samples)


def summarise(samples: list[dict[str, float]]) -> dict:
    completed = [s["completed"] for s in samples]
    stages = {k: median_of(samples, k) for k in ("accepted", "started", "model_request", "first_delta", "completed")}
    return {"p50_ms": statistics.median(completed), "p99_ms": percentile(completed, 99), "n": len(samples),
            "stages": stages}


def bench_overhead_paired(stack: Stack, key: str, model: Model,
                          n: int = int(os.environ.get("BENCH_OVERHEAD_TURNS", "200"))) -> tuple[dict, dict]:
    """`bench_overhead` through POST + GET events and through the streaming POST, turn by turn in alternation
    (one session each), so both see the same moments of a shared machine: (SSE figures, streaming POST figures)."""
    with stack.client(key) as c:
        sids = [c.post("/v1/sessions", json={}).json()["id"] for _ in range(2)]
        # No word of one session's turns appears in the other's: recall would find the other session's
        # just-stored twin of each message and give that side's turns a context block the other side lacks.
        words = ("overhead", "streamed")
        for i in range(10):  # warm up connections and caches
            for streamed, sid in enumerate(sids):
                timed_turns(c, model, sid, [f"warm {words[streamed]} {i + 1000 * streamed}"], bool(streamed))
        sids = [c.post("/v1/sessions", json={}).json()["id"] for _ in range(2)]
        runs: list[list[dict[str, float]]] = [[], []]
        for i in range(n):
            for streamed, sid in enumerate(sids):
                text = f"{words[streamed]} {i + 100_000 * streamed}"
                runs[streamed] += timed_turns(c, model, sid, [text], bool(streamed))
    return summarise(runs[0]), summarise(runs[1])


def cpu_ms(pid: int) -> float:
    """User + system CPU the process has used so far, ms (its threads included, its children not)."""
    times = psutil.Process(pid).cpu_times()
    return (times.user + times.system) * 1000


def bench_cpu(stack: Stack, procs: dict, key: str, n: int = CPU_TURNS, on_start=lambda: None) -> dict:
    """CPU ms per turn of each process over `n` sequential instant-model turns of one session.

    CPU time, not wall time: the machine is shared, and a process's CPU per turn is what bounds how many
    turns one worker process carries at once (its threads share one GIL).
    """
    with stack.client(key) as c:
        sid = c.post("/v1/sessions", json={}).json()["id"]
        timed_turns(c, None, sid, [f"cpu warm {i}" for i in range(10)])
        on_start()
        before = {name: cpu_ms(p.popen.pid) for name, p in procs.items()}
        timed_turns(c, None, sid, [f"cpu {i}" for i in range(n)])
        after = {name: cpu_ms(p.popen.pid) for name, p in procs.items()}
    return {"n": n, **{name: (after[name] - before[name]) / n for name in procs}}


def bench_first_turns(stack: Stack, procs: dict, key: str, n: int = CPU_TURNS, on_start=lambda: None) -> dict:
    """CPU ms per *first* turn of a new session, over `n` sessions run one after another (instant model).

    What each turn of the 200-session burst costs the worker: the system prompt built and frozen, the memory
    snapshots recorded, a session's first review counter, besides the work every turn does. The sessions are
    made before the clock starts (creating one is the api's work, not the turn's).
    """
    with stack.client(key) as c:
        for sid in [c.post("/v1/sessions", json={}).json()["id"] for _ in range(10)]:
            run_to_completion(c, sid, "load")
        sids = [c.post("/v1/sessions", json={}).json()["id"] for _ in range(n)]
        on_start()
        before = {name: cpu_ms(p.popen.pid) for name, p in procs.items()}
        for sid in sids:
            run_to_completion(c, sid, "load")  # as the burst posts: one word, so recall finds nothing to add
        after = {name: cpu_ms(p.popen.pid) for name, p in procs.items()}
    return {"n": n, **{name: (after[name] - before[name]) / n for name in procs}}


def report_cpu(stack: Stack, procs: dict, key: str, on_start=lambda: None) -> dict:
    db = "Postgres" if stack.database_url.startswith("postgres") else "SQLite"
    cpu = bench_cpu(stack, procs, key, on_start=on_start)
    print(f"\nCPU per turn, {cpu['n']} sequential instant-model turns of one session ({db}):")
    figure(f"worker CPU per turn ({db})", cpu["worker"], "ms", target=TARGETS["worker_cpu_ms"])
    figure(f"api CPU per turn ({db})", cpu["api"], "ms")
    return cpu


def report_first_turns(stack: Stack, procs: dict, key: str, on_start=lambda: None) -> dict:
    db = "Postgres" if stack.database_url.startswith("postgres") else "SQLite"
    cpu = bench_first_turns(stack, procs, key, on_start=on_start)
    print(f"\nCPU per first turn, {cpu['n']} new sessions one after another, instant model ({db}):")
    figure(f"worker CPU per first turn of a session ({db})", cpu["worker"], "ms")
    figure(f"api CPU per first turn of a session ({db})", cpu["api"], "ms")
    return cpu


def bench_growth(stack: Stack, key: str, n: int = 500, window: int = 20) -> dict:
    """One session of `n` turns: median cost of turns 3.. (3+window) against the last `window` turns."""
    with stack.client(key) as c:
        sid = c.post("/v1/sessions", json={}).json()["id"]
        samples = timed_turns(c, None, sid, [f"growth {i}" for i in range(n)])
    early = [s["completed"] for s in samples[2:2 + window]]
    late = [s["completed"] for s in samples[-window:]]
    return {"n": n, "early_ms": statistics.median(early), "late_ms": statistics.median(late),
            "ratio": statistics.median(late) / statistics.median(early)}


def seed_history(stack: Stack, user_key: str, messages: int) -> None:
    """Store `messages` earlier messages of the key's user straight into the stack's database (bulk)."""
    import random

    from bench.recall import PER_SESSION, sentence
    from shared.db import get_database
    from shared.stores import sessions

    db = get_database(stack.database_url)
    with stack.client(user_key) as c:
        sids = [c.post("/v1/sessions", json={}).json()["id"] for _ in range(max(1, messages // (PER_SESSION * 20)))]
    rng = random.Random(11)
    rows = [{"session_id": sids[n % len(sids)], "role": "user" if n % 2 == 0 else "assistant",
             "content": sentence(rng)} for n in range(messages)]
    sessions.bulk_insert_messages(db, rows)


def bench_history(stack: Stack, model: Model, key_new: str, key_heavy: str, n: int = 60) -> dict:
    """Turns whose message the recall provider searches for: a new user against one with a long history.

    The two users' turns alternate (new, heavy, heavy, new, ...), so both see the same moments of the machine;
    one user's turns after the other's had the second meet whatever the first left running (the bulk seed's
    checkpoints, the reviewer)."""
    from bench.recall import questions

    with stack.client(key_new) as new, stack.client(key_heavy) as heavy:
        sides = {name: (c, c.post("/v1/sessions", json={}).json()["id"]) for name, c in (("new", new), ("heavy", heavy))}
        for c, sid in sides.values():
            timed_turns(c, model, sid, questions(1, 5))
        samples: dict[str, list] = {"new": [], "heavy": []}
        for i, question in enumerate(questions(2, n)):
            for name in ("new", "heavy") if i % 2 == 0 else ("heavy", "new"):
                c, sid = sides[name]
                samples[name] += timed_turns(c, model, sid, [question])
    return {name: {k: median_of(runs, k) for k in ("model_request", "completed")} for name, runs in samples.items()}


def reviews_seen(model: Model, since: int = 0) -> int:
    """Review requests (ours or the anchor's) the scripted model received after the first `since` requests."""
    return sum(1 for r in model.requests_since(since) if r.path == "/v1/chat/completions" and is_review(r.body))


def overhead_figures(stack: Stack, model: Model, key: str, reviewer=None) -> dict:
    """Sequential instant-model turns of one session: their stages, p50 (and p99 on SQLite), first delta.

    Reviews start right after their trigger, as in the agent we learn from, and the scripted model answers
    them as a real one would (bench/review_model.py): with `reviewer` (its process), the CPU it spent during
    the run is printed beside p99, since its work shares the machine's cores with the turns measured."""
    db = "Postgres" if stack.database_url.startswith("postgres") else "SQLite"
    seen = model.request_count()
    reviewer_before = cpu_ms(reviewer.popen.pid) if reviewer is not None else None
    overhead, streamed = bench_overhead_paired(stack, key, model)
    reviews = reviews_seen(model, seen)
    reviewer_note = ""
    if reviewer_before is not None:
        spent = cpu_ms(reviewer.popen.pid) - reviewer_before
        overhead["reviewer_cpu_ms"], overhead["review_calls"] = spent, reviews
        reviewer_note = f"; reviewer CPU {spent:.0f} ms over the run ({spent / (2 * overhead['n']):.1f} ms/turn), " \
                        f"{reviews} review model calls"
    st = overhead["stages"]
    print(f"turn overhead, POST → turn.completed over SSE, {overhead['n']} sequential turns, instant model ({db}), "
          "in alternation with as many through the streaming POST:")
    print("  stage medians (ms from the POST): " + ", ".join(f"{k} {v:.1f}" for k, v in st.items()))
    figure(f"turn overhead p50 ({db})", overhead["p50_ms"], "ms", target=TARGETS[f"overhead_p50_ms_{db.lower()}"],
           note=f"p99 {overhead['p99_ms']:.1f} ms{reviewer_note}")
    if db == "SQLite":
        figure(f"turn overhead p99 ({db})", overhead["p99_ms"], "ms", target=TARGETS["overhead_p99_ms"],
               note=reviewer_note.removeprefix("; "))
    # the instant model answers at once: everything before its first delta is the stack's
    figure(f"stack time to first message.delta p50 ({db})", st["first_delta"], "ms",
           target=TARGETS["first_delta_ms"], note=f"model received the call at {st['model_request']:.1f} ms")
    print(f"turn overhead, one streaming POST (Accept: text/event-stream) → turn.completed, {streamed['n']} "
          f"sequential turns, instant model ({db}):")
    print("  stage medians (ms from the POST): " + ", ".join(f"{k} {v:.1f}" for k, v in streamed["stages"].items()))
    figure(f"turn overhead p50, streaming POST ({db})", streamed["p50_ms"], "ms",
           target=TARGETS[f"overhead_p50_ms_{db.lower()}"], note=f"p99 {streamed['p99_ms']:.1f} ms{reviewer_note}")
    overhead["streamed"] = {"p50_ms": streamed["p50_ms"], "p99_ms": streamed["p99_ms"], "n": streamed["n"],
                            "stages": streamed["stages"]}
    # The figures above are the bench user's, who by now has ~440 messages in earlier sessions, so each turn's
    # recall searches them. The same turns for a new user (whose only earlier session is its 10 warm-up turns)
    # say how much of that is the user's history.
    fresh = bench_overhead(stack, stack.create_user(f"bench-fresh-{db.lower()}"), model=model)
    print(f"  the same turns for a new user ({db}): p50 {fresh['p50_ms']:.1f} ms, "
          f"p99 {fresh['p99_ms']:.1f} ms, first delta {fresh['stages']['first_delta']:.1f} ms (no target: "
          "decomposition only)")
    overhead["fresh_user"] = {"p50_ms": fresh["p50_ms"], "p99_ms": fresh["p99_ms"],
                              "first_delta_ms": fresh["stages"]["first_delta"]}
    return overhead


def report_overhead(stack: Stack, model: Model, key: str, reviewer=None) -> dict:
    """Turn overhead, its stages, its growth with the session and with the user's history, as figures."""
    db = "Postgres" if stack.database_url.startswith("postgres") else "SQLite"
    overhead = overhead_figures(stack, model, key, reviewer)
    growth = bench_growth(stack, key, n=GROWTH_TURNS)
    figure(f"turn {growth['n']} vs turns 3-22 of one session ({db})", growth["ratio"], "x",
           target=TARGETS["growth_ratio"], digits=2,
           note=f"median {growth['late_ms']:.1f} ms (last 20) vs {growth['early_ms']:.1f} ms")
    heavy_key = stack.create_user("bench-history")
    started = time.perf_counter()
    seed_history(stack, heavy_key, HISTORY_MESSAGES)
    print(f"  seeded {HISTORY_MESSAGES:,} earlier messages for one user in {time.perf_counter() - started:.1f} s")
    # a user with no history at all (the bench's own user has ~1,400 messages of its own by now)
    history = bench_history(stack, model, stack.create_user("bench-new"), heavy_key)
    added = history["heavy"]["completed"] - history["new"]["completed"]
    figure(f"recall's added time per turn at {HISTORY_MESSAGES:,} messages, p50 ({db})", added, "ms",
           target=TARGETS["recall_added_ms"], note=f"real stack: new user {history['new']['completed']:.1f} ms, "
           f"long history {history['heavy']['completed']:.1f} ms per turn")
    return {"overhead": overhead, "growth": growth, "history": history}


def bench_concurrency(stack: Stack, model: Model, sessions: int, procs: dict | None = None,
                      on_start=lambda: None) -> dict:
    """N new users each POST one turn at once (a 2 s model); seconds until the clients saw every turn completed.

    Each turn is posted with `Accept: text/event-stream` and its client reads its own events to turn.completed
    (`bench.burst.burst`), so the figure is when the last answer reached its user, not when a poller got round to
    asking. With `procs`, also the CPU ms each of those processes spent per turn, first POST to the last completion.
    """
    model.reset()
    model.latency = MODEL_SECONDS
    procs = procs or {}
    keys = [stack.create_user(f"burst-{sessions}-{n}") for n in range(sessions)]  # a user's streams are capped
    sids = []
    for user_key in keys:
        with stack.client(user_key) as c:
            sids.append(c.post("/v1/sessions", json={}).json()["id"])
    on_start()
    before = {name: cpu_ms(p.popen.pid) for name, p in procs.items()}
    arrival_base = time.monotonic()
    seen = asyncio.run(burst(stack.base_url, [{"Authorization": f"Bearer {k}"} for k in keys], sids))
    cpu = {name: (cpu_ms(p.popen.pid) - before[name]) / sessions for name, p in procs.items()}
    arrivals = [r.at - arrival_base for r in model.requests
                if r.path == "/v1/chat/completions" and latest_user_text(r.body).startswith(BURST_TEXT)]
    model.latency = 0.0
    return {"sessions": sessions, "seconds": seen.elapsed, "turns_per_s": sessions / seen.elapsed,
            "accepted_s": seen.accepted, "last_model_call_s": max(arrivals) if arrivals else None,
            "max_in_flight": model.max_in_flight, "cpu_ms_per_turn": cpu}


def report_concurrency(results: list[dict]) -> None:
    print(f"\none worker process, {MODEL_SECONDS:.0f} s model, N new sessions post a turn at once "
          "(each through a streaming POST):")
    for r in results:
        target = TARGETS["sessions_200_s"] if r["sessions"] == 200 else None
        cpu = "".join(f", {name} CPU {ms:.1f} ms/turn" for name, ms in r["cpu_ms_per_turn"].items())
        figure(f"{r['sessions']} sessions at once, first POST → all seen completed", r["seconds"], "s",
               target=target, digits=2,
               note=f"all accepted {r['accepted_s']:.2f} s, last model call began {r['last_model_call_s']:.2f} s, "
                    f"{r['turns_per_s']:.1f} turns/s, max {r['max_in_flight']} calls in flight{cpu}")
    carried = max(r["max_in_flight"] for r in results)
    figure("turns one worker carries at once (model calls in flight)", carried, "", target=TARGETS["in_flight"],
           better="higher", digits=0)


def report_anchor(model: Model, overhead: dict) -> dict | None:
    """Hermes Agent's turn beside ours: in-process, as the ratio with a target, then through its own HTTP api server,
    for information; a skip line when it is not installed."""
    print()
    if not anchor_run.installed():
        print(anchor_run.skip_line())
        return None
    in_process = report_anchor_in_process(model, overhead)
    over_http = report_anchor_http(model, overhead)
    if in_process is None and over_http is None:
        return None
    return {**(in_process or {}), "http": over_http}


def report_anchor_in_process(model: Model, overhead: dict) -> dict | None:
    """Hermes Agent's in-process turn beside ours through api+worker+SSE, as a ratio to its target."""
    try:
        anchor = anchor_run.run_anchor(model, ANCHOR_TURNS)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"anchor: failed, no ratio this run: {exc}")
        return None
    print(f"anchor: hermes-agent {anchor_run.anchor_version()} in-process (AIAgent.run_conversation, no HTTP api), "
          f"ours through api + worker + SSE; the same instant scripted model; anchor {anchor.n} turns of one "
          f"conversation, ours {overhead['n']} turns of one session")
    figure("anchor turn, in-process, p50", anchor.p50_ms, "ms",
           note=f"p99 {anchor.p99_ms:.1f} ms; its reviews run in its own process (a thread), "
                f"{reviews_seen(model)} review model calls")
    figure("our overhead / anchor overhead (p50), POST + SSE", overhead["p50_ms"] / anchor.p50_ms, "x",
           target=TARGETS["anchor_ratio"], digits=2,
           note=f"ours {overhead['p50_ms']:.1f} ms / anchor {anchor.p50_ms:.1f} ms")
    if "streamed" in overhead:
        streamed = overhead["streamed"]["p50_ms"]
        figure("our overhead / anchor overhead (p50), streaming POST", streamed / anchor.p50_ms, "x",
               target=TARGETS["anchor_ratio"], digits=2, note=f"ours {streamed:.1f} ms / anchor {anchor.p50_ms:.1f} ms")
    figure("anchor request bytes, first model call", anchor.first_call_bytes / 1000, "KB",
           note=f"median over its {anchor.calls} turn calls {anchor.median_call_bytes / 1000:.1f} KB")
    return {"p50_ms": anchor.p50_ms, "p99_ms": anchor.p99_ms, "n": anchor.n,
            "first_call_bytes": anchor.first_call_bytes, "median_call_bytes": anchor.median_call_bytes}


def report_anchor_http(model: Model, overhead: dict) -> dict | None:
    """Hermes Agent reached as ours is, over HTTP with the events streamed back, beside our streaming POST.

    No target: the like-for-like figure, printed beside the in-process ratio that the target is set on. Any failure
    of this run prints a line and the bench goes on."""
    try:
        anchor = anchor_run.run_anchor_http(model, ANCHOR_TURNS)
    except Exception as exc:  # an informational figure never stops the bench
        print(f"anchor over its HTTP api: failed, no figure this run: {exc}")
        return None
    print(f"anchor over its HTTP api: hermes-agent's API server (gateway platform api_server) in its own process, "
          f"{anchor.n} turns of one stored session, each POST /api/sessions/{{id}}/chat/stream read to run.completed")
    figure("anchor turn over its HTTP api, p50", anchor.p50_ms, "ms",
           note=f"p99 {anchor.p99_ms:.1f} ms; an AIAgent built per request; {reviews_seen(model)} review model calls; "
                f"first call {anchor.first_call_bytes / 1000:.1f} KB")
    if "streamed" in overhead:
        ours = overhead["streamed"]["p50_ms"]
        figure("our overhead / anchor over its HTTP api (p50), streaming POST", ours / anchor.p50_ms, "x", digits=2,
               note=f"ours {ours:.1f} ms / anchor {anchor.p50_ms:.1f} ms; informational, no target")
    return {"p50_ms": anchor.p50_ms, "p99_ms": anchor.p99_ms, "n": anchor.n,
            "first_call_bytes": anchor.first_call_bytes, "median_call_bytes": anchor.median_call_bytes}


def our_first_call_bytes(stack: Stack, model: Model, key: str) -> int:
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


def profile_cpu(mode: str, argv: list[str]) -> int:
    """`python -m bench.turns {cpu,first,burst} [DIR]`: only one workload's CPU figures.

    cpu: 200 sequential turns of one session; first: the first turns of 200 new sessions, one after another;
    burst: 200 new sessions post a turn at once (2 s model), its wall time and each process's CPU per turn.
    With DIR, the worker and api run under the bench probe (cProfile unless HSTACK_PROBE_CPU names functions)
    and leave `{api,worker}.{before,after}.{prof,json}` there, which subtract to the workload alone.
    """
    import signal

    out = argv[0] if argv else None
    overrides = {"LOG_LEVEL": "WARNING", "WORKER_CONCURRENCY": "200", "MAX_RUNNING_TURNS_PER_USER": "0"}
    if out:
        os.makedirs(out, exist_ok=True)
        overrides.update(PYTHONPATH=os.pathsep.join([PROBE_DIR, os.getcwd()]), HSTACK_PROBE_DIR=os.path.abspath(out))
        if not os.environ.get("HSTACK_PROBE_CPU"):  # cProfile, unless timing named functions (cProfile skews that)
            overrides["HSTACK_PROFILE"] = os.environ.get("HSTACK_PROFILE", "1")
    model = ModelProcess(port=ENV.model_port).start()  # a process of its own, as a provider is; reviews answered as one
    stack = Stack(model_url=model.base_url, env_overrides=overrides)
    try:
        procs = {"api": stack.start_api(), "worker": stack.start_worker(concurrency=200)}
        stack.start_worker("reviewer", queue="review", concurrency=50)

        def dump(suffix: str) -> None:
            for name, proc in procs.items():
                counts = os.path.join(out, f"{proc.popen.pid}.json")  # written after the profile
                proc.signal(signal.SIGUSR2)
                wait_until(lambda: os.path.exists(counts), timeout=60, what=f"the {name}'s profile")
                if "HSTACK_PROFILE" in overrides:
                    os.replace(os.path.join(out, f"{proc.popen.pid}.prof"), os.path.join(out, f"{name}.{suffix}.prof"))
                os.replace(counts, os.path.join(out, f"{name}.{suffix}.json"))

        on_start = (lambda: dump("before")) if out else (lambda: None)
        key = stack.create_user("bench")
        if mode == "burst":
            with stack.client(key) as c:  # warm the worker's threads and caches, as the full bench's earlier runs do
                for sid in [c.post("/v1/sessions", json={}).json()["id"] for _ in range(10)]:
                    run_to_completion(c, sid, "load")
            report_concurrency([bench_concurrency(stack, model, 200, procs, on_start=on_start)])
        elif mode == "first":
            report_first_turns(stack, procs, key, on_start=on_start)
        else:
            report_cpu(stack, procs, key, on_start=on_start)
        if out:
            dump("after")
            print(f"  profiles and counters: {out}/{{api,worker}}.{{before,after}}.{{prof,json}} (subtract before from after)")
        return 0
    finally:
        stack.stop()
        model.stop()
        ENV.close()


def report_without_recall(stack: Stack, key: str, model: Model, anchor: dict | None, ours_ms: float,
                          n: int = int(os.environ.get("BENCH_OVERHEAD_TURNS", "200"))) -> dict:
    """Recall's share of the overhead: streaming-POST turns alternated between this stack and a second one with the
    recall provider off (`MEMORY_PROVIDER=`), so each pair sees the same moment of the machine; for decomposition,
    no target. Our default runs a recall search over the user's earlier sessions on every turn; Hermes Agent's
    default has no external memory provider, so the second stack is the like-for-like configuration."""
    bare = Stack(model_url=model.base_url, env_overrides={"LOG_LEVEL": "WARNING", "MAX_RUNNING_TURNS_PER_USER": "0",
                                                           "MEMORY_PROVIDER": ""})
    try:
        bare.start_api()
        bare.start_worker()
        bare.start_worker("reviewer", queue="review", concurrency=50)
        clients = [stack.client(key), bare.client(bare.create_user("bench-no-recall"))]
        sids = [c.post("/v1/sessions", json={}).json()["id"] for c in clients]
        runs: list[list[dict[str, float]]] = [[], []]
        for i in range(10 + n):
            for side in (0, 1) if i % 2 == 0 else (1, 0):
                stages = stages_of_streamed_turn(clients[side], sids[side], f"paired {i}")
                if i >= 10:  # warm-up turns left out
                    runs[side].append(stages)
        for c in clients:
            c.close()
    finally:
        bare.stop()
    with_recall, without = summarise(runs[0]), summarise(runs[1])
    saved = statistics.median(a["completed"] - b["completed"] for a, b in zip(*runs))
    print(f"\nrecall's share of the overhead: {n} streaming-POST turns alternated between this stack (the bench user, "
          "recall on) and a stack with the recall provider off (MEMORY_PROVIDER=, a new user); both stacks run, so "
          "read the difference, not the level:")
    figure("turn overhead p50, recall on / off, streaming POST (SQLite)", with_recall["p50_ms"], "ms",
           note=f"off {without['p50_ms']:.1f} ms; paired difference (on - off) median {saved:+.1f} ms")
    if anchor is not None and anchor.get("p50_ms"):
        figure("our streaming-POST overhead less recall's paired share / anchor in-process (p50)",
               (ours_ms - saved) / anchor["p50_ms"], "x", digits=2,
               note=f"({ours_ms:.1f} {-saved:+.1f}) ms / anchor {anchor['p50_ms']:.1f} ms; informational, the "
                    "target is on the default configuration")
    return {"with_recall_p50_ms": with_recall["p50_ms"], "without_recall_p50_ms": without["p50_ms"],
            "paired_difference_ms": saved}


def report_postgres(model: Model) -> dict | None:
    """The same sequential-turn overhead on a second stack whose database is Postgres (a scratch database on
    the machine's server); a skip line when no server answers on 127.0.0.1:5432."""
    if not test_env.reachable("127.0.0.1", 5432):
        print("\nturn overhead on Postgres: skipped, no PostgreSQL server on 127.0.0.1:5432")
        return None
    backend = os.environ["TEST_DATABASE"]
    os.environ["TEST_DATABASE"] = "postgres"  # the stack's scratch database comes from the Postgres template
    try:
        stack = Stack(model_url=model.base_url,
                      env_overrides={"LOG_LEVEL": "WARNING", "MAX_RUNNING_TURNS_PER_USER": "0"})
    finally:
        os.environ["TEST_DATABASE"] = backend
    try:
        api, worker = stack.start_api(), stack.start_worker()
        key = stack.create_user("bench-postgres")
        print()
        cpu = report_cpu(stack, {"api": api, "worker": worker}, key)
        overhead = overhead_figures(stack, model, key)
        return {"overhead": overhead, "cpu_ms_per_turn": cpu}
    finally:
        stack.stop()


def main() -> int:
    if sys.argv[1:2] and sys.argv[1] in ("cpu", "first", "burst"):
        return profile_cpu(sys.argv[1], sys.argv[2:])
    model = ModelProcess(port=ENV.model_port).start()  # a process of its own, as a provider is; reviews answered as one
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

        cpu = report_cpu(stack, {"api": api, "worker": worker}, key)
        turn_figures = report_overhead(stack, model, key, reviewer)
        overhead = turn_figures["overhead"]

        anchor = report_anchor(model, overhead)
        without_recall = report_without_recall(stack, key, model, anchor, overhead["streamed"]["p50_ms"])
        # a user of its own: the bench user's reviews have saved memories by now, and this figure is the empty-memory one
        ours_bytes = our_first_call_bytes(stack, model, stack.create_user("bench-first-call"))
        figure("our request bytes, first call of a new session, empty memory", ours_bytes / 1000, "KB",
               target=TARGETS["first_call_kb"])

        first = report_first_turns(stack, {"api": api, "worker": worker}, key)
        results = [bench_concurrency(stack, model, n, {"worker": worker}) for n in (10, 100, 200)]
        report_concurrency(results)
        postgres = report_postgres(model)

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
        print("\n" + json.dumps({**turn_figures, "cpu_ms_per_turn": cpu, "cpu_ms_per_first_turn": first,
                                 "anchor": anchor, "without_recall": without_recall,
                                 "first_call_bytes": ours_bytes,
                                 "concurrency": results, "rss_mb": rss, "cold_start_s": cold, "postgres": postgres}))
        return 0
    finally:
        stack.stop()
        model.stop()
        ENV.close()


if __name__ == "__main__":
    sys.exit(main())
