"""`make bench`: one skill evolution run against the scripted rubric (tests/support/evolution.py), in process.

A weak skill (one step of three) and 6 / 12 / 24 sessions that loaded it, each needing the two missing steps.
Prints, per evidence size: model calls, tokens, metric calls, wall time, and the train / held-out scores of the
current and the proposed text. The model answers at once, so the wall time is the stack's own overhead (the
database, GEPA, the metric's checks); with a real provider, multiply the model calls by its latency. Asserts nothing.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("TEST_DATABASE", "sqlite")
from tests.support import env as test_env  # noqa: E402  (fixes the environment before Settings are read)

ENV = test_env.prepare()

from services.worker.evolution.run import run_evolution  # noqa: E402
from shared.config import get_settings  # noqa: E402
from shared.db import get_database  # noqa: E402
from shared.llm import get_llm  # noqa: E402
from shared.stores import evolution_runs, users  # noqa: E402
from tests.fakes.model import FakeModel  # noqa: E402
from tests.support.evolution import NEEDED, script_rubric, session_that_loaded, weak_skill  # noqa: E402


def one_run(db, settings, model, sessions: int) -> str:
    user = users.create_user(db, f"evolve-bench-{sessions}-{time.time_ns()}")
    weak_skill(db, settings, user.id, "ship-billing")
    for n in range(sessions):
        session_that_loaded(db, user.id, "ship-billing", f"ship billing {n}", NEEDED)
    model.reset()
    script_rubric(model, 20_000)
    run = evolution_runs.start(db, settings, user.id, "ship-billing")
    started = time.perf_counter()
    run_evolution(db, settings, get_llm(settings), run.id, "bench")
    wall = time.perf_counter() - started
    r = evolution_runs.get(db, user.id, run.id)
    s = r.scores
    return (f"{sessions:>3} sessions  {r.status:<15} {r.model_calls:>4} model calls  "
            f"{r.prompt_tokens + r.completion_tokens:>7,} tokens  {r.metric_calls:>3} metric calls  {wall:6.2f} s  "
            f"train {s.get('train_before')} -> {s.get('train_after')}  held-out {s.get('heldout_before')} -> "
            f"{s.get('heldout_after')}")


def main() -> None:
    settings = get_settings().model_copy(update={"evolve_daily_runs": 1_000})
    db = get_database(settings.sqlalchemy_url)
    with FakeModel(port=ENV.model_port) as model:
        print("skill evolution, scripted rubric (EVOLVE_METRIC_CALLS=%d, margin %.2f)" %
              (settings.evolve_metric_calls, settings.evolve_margin))
        for sessions in (6, 12, 24):
            print("  " + one_run(db, settings, model, sessions))
    ENV.close()


if __name__ == "__main__":
    main()
