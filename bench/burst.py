"""`make bench`: 200 sessions at once with a 2 s model finish within 3 s, under `make run`'s defaults.

`hstack run` as a user starts it (its worker layout: WORKER_PROCESSES=0, one turns-worker process per core,
WORKER_CONCURRENCY split across them; its SQLite, its embedded Redis), the scripted model as an HTTP server in a
process of its own answering every call after 2 s. 200 users (so the per-user cap, a default too, is not what is
measured) each post one turn into a new session at once, each through the streaming POST (`Accept:
text/event-stream`, as `hstack chat`, the gateway and the console post) so each user's client sees its own answer's
end as it happens; the clock runs from the first POST until every client has seen its turn completed. Printed with when the last
turn finished by the server's clock, when the model calls began, and each process's CPU per turn, since the
machine's cores are what bounds it.

The client used to post from 64 threads and then poll GET /v1/turns/{id} oldest first, stopping at the first turn
still running: turns finish in the order their calls began, not the order they were posted, so after the last
answer it still walked the rest one GET at a time, 0.5-0.8 s after the server had finished them all.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass
from datetime import datetime

import httpx
import psutil

from bench.model_process import ModelProcess
from bench.report import figure, summary
from services.demo_model.replies import latest_user_text
from services.cli.stack import cores
from tests.support.hstack_run import HstackRun
from tests.support.waiting import wait_until

SESSIONS = int(os.environ.get("BENCH_BURST_SESSIONS", "200"))
MODEL_SECONDS = 2.0
TARGET_SECONDS = 3.0
SETUP_CONNECTIONS = 16
ENDINGS = ("turn.completed", "turn.failed", "turn.cancelled")
TEXT = "load"  # each burst turn's message (its model call is told from the session titles' calls by it)


def cpu_ms(pids: dict[str, int]) -> dict[str, float]:
    out = {}
    for name, pid in pids.items():
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.NoSuchProcess:
            continue
        out[name] = (times.user + times.system) * 1000
    return out


def service_pids(run: HstackRun) -> dict[str, int]:
    """The supervisor's children by service: api, worker, worker2, …, reviewer, curator, model, redis."""
    named = {}
    for pid, cmdline in run.children().items():
        if "uvicorn" in cmdline:
            named["api"] = pid
        elif " -n " in cmdline:
            named[cmdline.split(" -n ", 1)[1].split("@", 1)[0]] = pid
    return named


@dataclass(frozen=True)
class Seen:
    """What the 200 users' clients saw: seconds from the first POST until all were accepted and all completed."""

    accepted: float
    elapsed: float
    start_wall: float  # time.time() at the first POST, to read the server's timestamps against
    turn_ids: list[str]


async def burst(base: str, auth: list[dict], sids: list[str]) -> Seen:
    """Every user posts one turn at once with `Accept: text/event-stream` (as `hstack chat`, the gateway and the
    console do) and reads its own answer's events until turn.completed."""
    limits = httpx.Limits(max_connections=len(sids) + 8, max_keepalive_connections=len(sids) + 8)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:
        start, start_wall = time.perf_counter(), time.time()

        async def one(i: int) -> tuple[str, float, float]:
            async with client.stream("POST", f"/v1/sessions/{sids[i]}/turns", json={"input": TEXT},
                                     headers={**auth[i], "Accept": "text/event-stream"}) as response:
                response.raise_for_status()
                accepted = time.perf_counter() - start
                async for line in response.aiter_lines():
                    kind = line.removeprefix("event: ")
                    if kind in ENDINGS:
                        if kind != "turn.completed":
                            raise RuntimeError(f"a burst turn ended {kind}")
                        return response.headers["X-Turn-Id"], accepted, time.perf_counter() - start
            raise RuntimeError("a burst turn's stream ended before the turn did")

        results = await asyncio.gather(*(one(i) for i in range(len(sids))))
    return Seen(accepted=max(r[1] for r in results), elapsed=max(r[2] for r in results), start_wall=start_wall,
                turn_ids=[r[0] for r in results])


def finished_at(turn: dict) -> float:
    return datetime.fromisoformat(turn["finished_at"]).timestamp()


def main() -> int:
    with ModelProcess() as model:
        run = HstackRun(LLM_BASE_URL=model.base_url, LLM_API_KEY="sk-bench-fake", LLM_MODEL="scripted",
                        LOG_LEVEL="WARNING")
        with run:
            run.wait_ready()
            pids = service_pids(run)
            workers = sorted(n for n in pids if n.startswith("worker"))
            print(f"Burst under `make run` defaults: {len(workers)} turns-worker processes on {cores()} cores "
                  f"({', '.join(workers)}), {SESSIONS} users post one turn each at once, {MODEL_SECONDS:.0f} s model\n")
            with run.client() as admin:
                keys = []
                for n in range(SESSIONS):
                    user = admin.post("/v1/users", json={"name": f"burst-{n}"}).raise_for_status().json()
                    keys.append(admin.post(f"/v1/users/{user['id']}/keys").raise_for_status().json()["key"])
            limits = httpx.Limits(max_connections=SETUP_CONNECTIONS, max_keepalive_connections=SETUP_CONNECTIONS)
            with httpx.Client(base_url=run.base, timeout=60, limits=limits) as c:
                auth = [{"Authorization": f"Bearer {k}"} for k in keys]
                sids = [c.post("/v1/sessions", json={}, headers=h).raise_for_status().json()["id"] for h in auth]
                for h, sid in list(zip(auth, sids))[:10]:  # warm each worker's threads and caches
                    c.post(f"/v1/sessions/{sid}/turns", json={"input": "warm"}, headers=h)

                def answered(h: dict, sid: str) -> bool:
                    last = c.get(f"/v1/sessions/{sid}/messages", headers=h).json()["data"][-1:]
                    return bool(last) and last[0]["role"] == "assistant"

                wait_until(lambda: all(answered(h, s) for h, s in list(zip(auth, sids))[:10]),
                           timeout=60, what="the warm-up turns")
                sids = [c.post("/v1/sessions", json={}, headers=h).raise_for_status().json()["id"] for h in auth]
                model.latency = MODEL_SECONDS
                before = cpu_ms({**pids, "bench": os.getpid(), "model": model.pid})
                arrival_base = time.monotonic()
                seen = asyncio.run(burst(run.base, auth, sids))
                after = cpu_ms({**pids, "bench": os.getpid(), "model": model.pid})
                calls = sorted(r.at - arrival_base for r in model.requests if r.at >= arrival_base
                               and r.path == "/v1/chat/completions" and latest_user_text(r.body).startswith(TEXT))
                in_flight = model.max_in_flight
                finished = [finished_at(c.get(f"/v1/turns/{turn_id}", headers=h).json()) - seen.start_wall
                            for h, turn_id in zip(auth, seen.turn_ids)]
            run.stop()
    cpu = {name: (after[name] - before[name]) / SESSIONS for name in before if name in after}
    shown = ", ".join(f"{name} {ms:.1f}" for name, ms in sorted(cpu.items()) if name.startswith(("api", "worker")))
    busy = sum(cpu.values()) * SESSIONS / 1000 / (seen.elapsed * cores())
    figure(f"{SESSIONS} sessions at once, 2 s model, first POST -> all completed (make run)", seen.elapsed, "s",
           target=TARGET_SECONDS, digits=2,
           note=f"all accepted {seen.accepted:.2f} s, the last turn finished {max(finished):.2f} s by the server's "
                f"clock; model calls began {calls[0]:.2f}-{calls[-1]:.2f} s (half by {calls[len(calls) // 2]:.2f} s), "
                f"max {in_flight} in flight; CPU ms/turn: {shown}; this bench's own client {cpu.get('bench', 0):.1f} "
                f"and scripted model {cpu.get('model', 0):.1f}; the cores {busy:.0%} busy")
    summary("burst figures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
