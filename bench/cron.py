"""`make bench`: the scheduled-jobs tick at 1,000 due jobs (100 users, 10 jobs each), on SQLite and Postgres.

Prints how many jobs per second one tick claims and enqueues (each claim commits the run, its turn and the
job's next time; each turn's id goes to the real Redis broker), and the delay from the jobs' due time to
the start of their runs: to the turn on the queue (the tick's own part), and to a worker starting the turn
(one in-process worker, 32 threads, scripted model answering at once). The beat fires every
CRON_TICK_SECONDS, so a job waits up to that much more before its tick. Asserts nothing.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from datetime import timedelta

os.environ.setdefault("TEST_DATABASE", "sqlite")
from tests.support import env as test_env  # noqa: E402  (fixes the environment before Settings are read)

ENV = test_env.prepare()

from services.curator.cron import tick  # noqa: E402
from shared import clock  # noqa: E402
from shared.config import get_settings  # noqa: E402
from shared.db import get_database  # noqa: E402
from shared.models.cron import CronJob, JobCreate  # noqa: E402
from shared.queue.app import enqueue  # noqa: E402
from shared.stores import cron_jobs, cron_runs, turns, users  # noqa: E402
from tests.fakes.model import FakeModel  # noqa: E402
from tests.support.waiting import wait_until  # noqa: E402
from tests.support.worker import inprocess_worker  # noqa: E402

USERS, JOBS_PER_USER = 100, 10


def seed(db) -> list[str]:
    ids = []
    for u in range(USERS):
        user = users.create_user(db, f"cron-bench-{u}-{time.time_ns()}")
        for j in range(JOBS_PER_USER):
            ids.append(cron_jobs.create(db, user.id, JobCreate(schedule="every 1h", prompt=f"job {j}")).id)
    return ids


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered) * 1000:7.1f} ms  p99 {p99 * 1000:7.1f} ms  max {ordered[-1] * 1000:7.1f} ms"


def ticked(settings, db, ids: list[str], shift: timedelta):
    """Move the clock so the jobs are due now, tick once; (tick result, seconds, due wall time, due clock time,
    the runs, when each run's turn went on the queue)."""
    queued_at: dict[str, float] = {}

    def send(name, payload) -> None:
        enqueue(name, payload)
        queued_at[payload.turn_id] = time.perf_counter()

    clock.advance(shift)
    due_wall, due_clock = time.perf_counter(), clock.utcnow()
    done = tick(settings, send)
    elapsed = time.perf_counter() - due_wall
    runs = [r for job_id in ids for r in cron_runs.list_runs(db, owner(db, job_id), job_id)]
    return done, elapsed, due_clock, runs, [queued_at[r.turn_id] - due_wall for r in runs]


def main() -> int:
    settings = get_settings().model_copy(update={"max_running_turns_per_user": 0})
    db = get_database(settings.sqlalchemy_url)
    backend = db.engine.dialect.name
    model = FakeModel(port=ENV.model_port)
    model.start()
    try:
        first = seed(db)
        with inprocess_worker(concurrency=32):
            done, elapsed, due_clock, runs, to_queue = ticked(settings, db, first, timedelta(hours=1))
            started = wait_until(lambda: _all_started(db, runs), timeout=900, interval=0.2, what="every run's turn")
        to_start = [(s - due_clock).total_seconds() for s in started]
        print(f"Scheduled jobs tick on {backend}, {done.started} due jobs, a worker running the turns (32 threads, "
              f"scripted model answering at once): {done.started / elapsed:,.0f} jobs/s claimed and enqueued")
        print(f"  due -> turn on the queue   {percentiles(to_queue)}")
        print(f"  due -> worker starts turn  {percentiles(to_start)}")
        for job_id in first:  # out of the way: only the new jobs are due at the second tick
            cron_jobs.remove(db, owner(db, job_id), job_id)
        done, elapsed, _, _, to_queue = ticked(settings, db, seed(db), timedelta(hours=2))
        print(f"The tick alone (no worker), {done.started} other due jobs: claimed and enqueued in {elapsed:.2f} s "
              f"= {done.started / elapsed:,.0f} jobs/s (batches of {settings.cron_claim_batch})")
        print(f"  due -> turn on the queue   {percentiles(to_queue)}")
        print(f"  plus the beat's phase: up to CRON_TICK_SECONDS={settings.cron_tick_seconds:g} s before the tick")
        return 0
    finally:
        clock.reset()
        model.stop()
        ENV.close()


def owner(db, job_id: str) -> str:
    with db.read() as s:
        return s.get(CronJob, job_id).user_id


def _all_started(db, runs) -> list | None:
    if not runs:
        raise RuntimeError("the tick started no run")
    found = [turns.get_turn(db, None, r.turn_id).started_at for r in runs]
    return found if all(found) else None


if __name__ == "__main__":
    sys.exit(main())
