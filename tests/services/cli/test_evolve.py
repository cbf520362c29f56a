"""`hstack evolve skill NAME` queues a run, follows it with a progress bar to its outcome, scores and cost;
`list`, `cancel` and the operator's `--user` form."""

from __future__ import annotations

import threading

from shared.llm import get_llm
from shared.models.evolution import EvolutionRun
from shared.stores import evolution_runs
from services.worker.evolution.run import run_evolution
from tests.support.evolution import NEEDED, script_rubric, session_that_loaded, weak_skill
from tests.support.factories import make_user
from tests.support.waiting import wait_until


def queued_run(db, user_id: str) -> EvolutionRun:
    """The user's first run, once the CLI has started it (a bounded wait on the row itself)."""
    return wait_until(lambda: evolution_runs.list_runs(db, user_id, 1), timeout=30, what="the CLI's run")[0]


def test_evolve_skill_follows_the_run_to_its_proposal_with_scores_and_cost(hstack, db, settings, model, monkeypatch):
    user = make_user(db)
    weak_skill(db, settings, user.id, "cli-billing")
    for n in range(6):
        session_that_loaded(db, user.id, "cli-billing", f"ship billing {n}", NEEDED)
    script_rubric(model)
    monkeypatch.setenv("HSTACK_API_KEY", user.key)
    result: list = []
    cli = threading.Thread(target=lambda: result.append(hstack("evolve", "skill", "cli-billing", "--budget", "40")))
    cli.start()
    run = queued_run(db, user.id)
    run_evolution(db, settings, get_llm(settings), run.id, "reviewer-test")  # the reviewer pool's part
    cli.join(60)

    [(code, out, _)] = result
    assert code == 0, out
    assert f"Run {run.id} of cli-billing queued on the reviewer pool." in out
    assert "[##############################] 100%" in out and "metric calls" in out
    assert "proposed: Held-out 0.00 → 1.00" in out
    assert "scores: held-out 0.0 -> 1.0, train 0.0 -> 1.0 (margin 0.1)" in out
    assert "cost: " in out and "model calls" in out and "tokens" in out
    code, listed, _ = hstack("evolve", "list")
    assert code == 0 and run.id in listed and "proposal pending" in listed


def test_cancel_and_the_errors_a_user_sees(hstack, db, settings, monkeypatch):
    user = make_user(db)
    weak_skill(db, settings, user.id, "cli-notes")
    monkeypatch.setenv("HSTACK_API_KEY", user.key)
    code, out, _ = hstack("evolve", "skill", "cli-notes", "--no-wait")
    assert code == 0 and "queued on the reviewer pool" in out
    run = evolution_runs.list_runs(db, user.id, 1)[0]
    code, out, _ = hstack("evolve", "cancel", run.id)
    assert code == 0 and "(cancelled)" in out
    code, _, err = hstack("evolve", "cancel", run.id)
    assert code == 1 and "already ended" in err
    code, _, err = hstack("evolve", "skill", "no-such-skill", "--no-wait")
    assert code == 1 and "no-such-skill" in err


def test_an_operator_starts_a_run_for_a_user_by_name_from_the_server(hstack, db, settings, monkeypatch):
    import shared.queue.app

    user = make_user(db)
    weak_skill(db, settings, user.id, "op-notes")
    sent: list = []
    monkeypatch.setattr(shared.queue.app, "enqueue", lambda name, payload: sent.append((name, payload.run_id)))

    code, out, _ = hstack("evolve", "skill", "op-notes", "--user", user.name, "--budget", "12", "--no-wait")

    run = evolution_runs.list_runs(db, user.id, 1)[0]
    assert code == 0 and f"Run {run.id} of op-notes queued" in out
    assert sent == [("evolve_skill", run.id)] and run.budget_metric_calls == 12 and run.status == "queued"
    code, _, err = hstack("evolve", "skill", "op-notes", "--user", "nobody-such", "--no-wait")
    assert code == 1 and err
