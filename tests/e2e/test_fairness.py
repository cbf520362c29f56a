"""One user's burst queues behind their own work: a per-user cap on running turns, with one worker process."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from sqlalchemy import func
from sqlmodel import select

from shared.db import get_database
from shared.models.turns import Turn
from tests.fakes.model import Reply, text
from tests.support.processes import Stack, wait_for_turn

pytestmark = pytest.mark.e2e

CAP = 2
BACKLOG = 40


class RunningSampler:
    """Polls the database for how many turns each user runs at once, keeping the highest count seen."""

    def __init__(self, database_url: str) -> None:
        self.db = get_database(database_url)
        self.highest: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "RunningSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            with self.db.read() as s:
                rows = s.exec(select(Turn.user_id, func.count()).where(Turn.status == "running")
                              .group_by(Turn.user_id)).all()
            for user_id, count in rows:
                self.highest[user_id] = max(self.highest[user_id], count)


def test_a_users_backlog_does_not_delay_another_users_turn_and_never_passes_the_cap(fake_model, model):
    """Reproduction: every accepted turn went to one FIFO queue, so user A's 200 turns (200 sessions) filled
    the worker's threads and user B's single turn waited behind all of them; nothing capped A's running turns."""
    model.latency = 0.15
    release = threading.Event()  # A's turns stay at the model until B's turn is done: no race with the clock

    def held(body: dict) -> Reply:
        release.wait(60)
        return text("done")

    model.on("backlog", *[held] * BACKLOG)
    stack = Stack(model_url=fake_model.base_url, env_overrides={"MAX_RUNNING_TURNS_PER_USER": str(CAP)})
    with stack:
        stack.start_api()
        stack.start_worker(concurrency=4)
        noisy, quiet = stack.client(stack.create_user("e2e-noisy")), stack.client(stack.create_user("e2e-quiet"))
        with noisy, quiet, RunningSampler(stack.database_url) as sampler:
            backlog = []
            for n in range(BACKLOG):
                sid = noisy.post("/v1/sessions", json={}).json()["id"]
                backlog.append(noisy.post(f"/v1/sessions/{sid}/turns", json={"input": f"backlog {n}"}).json())
            sid = quiet.post("/v1/sessions", json={}).json()["id"]
            single = quiet.post(f"/v1/sessions/{sid}/turns", json={"input": "just one"}).json()

            try:
                assert wait_for_turn(quiet, single["id"], timeout=60)["status"] == "completed"
                not_started = sum(noisy.get(f"/v1/turns/{t['id']}").json()["started_at"] is None for t in backlog)
            finally:
                release.set()
            assert not_started >= BACKLOG // 2, f"B's turn waited behind A's backlog ({not_started} left)"

            finished = [wait_for_turn(noisy, t["id"], timeout=120) for t in backlog]

    assert [t["status"] for t in finished] == ["completed"] * BACKLOG
    assert sampler.highest and max(sampler.highest.values()) <= CAP, sampler.highest  # the stack's own database
