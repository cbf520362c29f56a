"""`make bench`: 200 sessions at once with a 2 s model finish within 3 s, under `make run`'s defaults.

`hstack run` as a user starts it (its worker layout: WORKER_PROCESSES=0, one turns-worker process per core,
WORKER_CONCURRENCY split across them; its SQLite, its embedded Redis), the scripted model as its own HTTP server
answering every call after 2 s. 200 users (so the per-user cap, a default too, is not what is measured) each
post one turn into a new session at once; the clock runs from the first POST until the client has seen every
turn completed. Printed with each process's CPU per turn, since the machine's cores are what bounds it.
"""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import psutil

from bench.report import figure, summary
from services.cli.stack import cores
from tests.fakes.model import FakeModel
from tests.support.hstack_run import HstackRun
from tests.support.waiting import wait_until

SESSIONS = int(os.environ.get("BENCH_BURST_SESSIONS", "200"))
MODEL_SECONDS = 2.0
TARGET_SECONDS = 3.0
POST_THREADS = 64


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


def main() -> int:
    with FakeModel() as model:
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
            limits = httpx.Limits(max_connections=POST_THREADS * 2, max_keepalive_connections=POST_THREADS * 2)
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
                before = cpu_ms({**pids, "bench": os.getpid()})
                start = time.perf_counter()

                def post(i: int) -> tuple[dict, str]:
                    response = c.post(f"/v1/sessions/{sids[i]}/turns", json={"input": "load"}, headers=auth[i])
                    return auth[i], response.raise_for_status().json()["id"]

                with ThreadPoolExecutor(POST_THREADS) as pool:
                    pending = list(pool.map(post, range(SESSIONS)))
                accepted = time.perf_counter() - start

                def all_done() -> bool:
                    while pending:
                        h, turn_id = pending[0]
                        status = c.get(f"/v1/turns/{turn_id}", headers=h).json()["status"]
                        if status in ("failed", "cancelled"):
                            raise RuntimeError(f"a burst turn ended {status}")
                        if status != "completed":
                            return False
                        pending.pop(0)
                    return True

                wait_until(all_done, timeout=300, interval=0.05, what="every burst turn")
                elapsed = time.perf_counter() - start
                after = cpu_ms({**pids, "bench": os.getpid()})
            run.stop()
    cpu = {name: (after[name] - before[name]) / SESSIONS for name in before if name in after}
    shown = ", ".join(f"{name} {ms:.1f}" for name, ms in sorted(cpu.items()) if name.startswith(("api", "worker")))
    busy = sum(cpu.values()) * SESSIONS / 1000 / (elapsed * cores())
    figure(f"{SESSIONS} sessions at once, 2 s model, first POST -> all completed (make run)", elapsed, "s",
           target=TARGET_SECONDS, digits=2,
           note=f"all accepted {accepted:.2f} s, max {model.max_in_flight} model calls in flight; "
                f"CPU ms/turn: {shown}; this bench's own client and scripted model {cpu.get('bench', 0):.1f}; "
                f"the cores {busy:.0%} busy")
    summary("burst figures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
