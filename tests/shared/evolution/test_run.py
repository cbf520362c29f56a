"""A whole evolution run against the scripted rubric: a weak skill gets a better text proposed, a text that only
fits the train sessions gets nothing, and the budget, the evidence rule and cancellation are held."""

from __future__ import annotations

import pytest

from shared.evolution.evidence import split
from shared.llm import get_llm
from shared.models.evolution import EvolutionStatus
from shared.stores import evolution_runs, skill_staged
from shared.stores.skill_writes import SkillEditor
from shared.stores.skills import SkillStore
from services.worker.evolution.run import run_evolution
from tests.support.evolution import (NEEDED, WEAK, load_skill_in, new_session, script_rubric, session_that_loaded,
                                     weak_skill)


@pytest.fixture
def evolve_settings(settings):
    return settings.model_copy(update={"evolve_min_sessions": 4, "evolve_metric_calls": 60, "evolve_daily_runs": 50})


def run(db, settings, user_id: str, skill: str, budget: int | None = None):
    started = evolution_runs.start(db, settings, user_id, skill, budget)
    status = run_evolution(db, settings, get_llm(settings), started.id, "test-worker")
    return status, evolution_runs.get(db, user_id, started.id)


def test_a_weak_skill_gets_a_text_that_scores_higher_on_held_out_sessions_staged_for_approval(
        db, evolve_settings, user, model):
    skill = weak_skill(db, evolve_settings, user.id)
    for n in range(6):
        session_that_loaded(db, user.id, skill, f"deploy billing to cluster {n}", NEEDED)
    script_rubric(model)

    status, found = run(db, evolve_settings, user.id, skill)

    assert status == "proposed", found.summary
    assert found.scores["heldout_after"] >= found.scores["heldout_before"] + 0.1
    assert found.scores["heldout_before"] == 0.0 and found.scores["heldout_after"] == 1.0
    assert found.scores["train_after"] >= found.scores["train_before"]
    assert set(found.evidence["train_sessions"]).isdisjoint(found.evidence["heldout_sessions"])
    assert "+- run the migrations" in found.diff and "+- drain the queue" in found.diff
    assert found.model_calls > 0 and found.prompt_tokens > 0 and 0 < found.metric_calls <= 60
    [pending] = skill_staged.list_pending(db, user.id)
    assert pending.id == found.staged_id and pending.name == skill
    store = SkillStore.for_user(db, evolve_settings, user.id)
    assert "drain the queue" not in (store.get(skill).path / "SKILL.md").read_text()  # nothing applied yet


def test_a_candidate_that_only_fits_the_train_sessions_is_not_proposed(db, evolve_settings, user, model):
    skill = weak_skill(db, evolve_settings, user.id)
    ids = [new_session(db, user.id) for _ in range(6)]
    train, held = split(ids)
    for sid in train:
        load_skill_in(db, sid, skill, "deploy billing", NEEDED)
    for sid in held:
        load_skill_in(db, sid, skill, "deploy billing", ["rotate the keys", "warm the cache"])
    script_rubric(model)

    status, found = run(db, evolve_settings, user.id, skill)

    assert status == "no_improvement"
    assert found.scores["train_after"] > found.scores["train_before"]
    assert found.scores["heldout_after"] == found.scores["heldout_before"] == 0.0
    assert "only fits the train sessions" in found.summary and found.staged_id is None
    assert skill_staged.list_pending(db, user.id) == []


def test_a_skill_with_too_few_sessions_says_so_and_spends_nothing(db, evolve_settings, user, model):
    skill = weak_skill(db, evolve_settings, user.id)
    session_that_loaded(db, user.id, skill, "deploy billing", NEEDED)

    status, found = run(db, evolve_settings, user.id, skill)

    assert status == "no_improvement" and "a run needs at least 4" in found.summary
    assert found.model_calls == 0 and model.requests == []


def test_the_metric_call_budget_bounds_the_run(db, evolve_settings, user, model):
    skill = weak_skill(db, evolve_settings, user.id)
    for n in range(6):
        session_that_loaded(db, user.id, skill, f"deploy billing {n}", NEEDED)
    script_rubric(model)

    status, found = run(db, evolve_settings, user.id, skill, budget=8)

    assert found.budget_metric_calls == 8 and found.metric_calls <= 8
    assert status == "no_improvement" and found.staged_id is None


def test_a_cancelled_run_stages_nothing(db, evolve_settings, user, model):
    skill = weak_skill(db, evolve_settings, user.id)
    for n in range(6):
        session_that_loaded(db, user.id, skill, f"deploy billing {n}", NEEDED)
    started = evolution_runs.start(db, evolve_settings, user.id, skill)

    def cancel_then_answer(body):
        evolution_runs.cancel(db, user.id, started.id)
        from tests.support.evolution import rubric
        return rubric(body)

    model.on("[evolve:", cancel_then_answer, *([cancel_then_answer] * 50))
    status = run_evolution(db, evolve_settings, get_llm(evolve_settings), started.id, "test-worker")

    found = evolution_runs.get(db, user.id, started.id)
    assert status == "cancelled" and found.status == EvolutionStatus.cancelled.value
    assert found.staged_id is None and skill_staged.list_pending(db, user.id) == []


def test_a_skill_that_already_has_every_step_is_not_searched(db, evolve_settings, user, model):
    name = "deploy-complete"
    complete = WEAK.format(name) + "2. Run the migrations.\n3. Drain the queue.\n"
    SkillEditor(SkillStore.for_user(db, evolve_settings, user.id), "review").create(name, complete)
    for n in range(6):
        session_that_loaded(db, user.id, name, f"deploy billing {n}", NEEDED)
    script_rubric(model)

    status, found = run(db, evolve_settings, user.id, name)

    assert status == "no_improvement" and "already scores 1.00 on held-out" in found.summary
    assert found.metric_calls == found.scores["heldout_tasks"]  # only the held-out baseline was scored


def test_a_skill_already_over_the_size_limit_is_not_searched(db, evolve_settings, user, model):
    name = "deploy-huge"
    SkillEditor(SkillStore.for_user(db, evolve_settings, user.id), "review").create(
        name, WEAK.format(name) + "Some detail here.\n" * 100)
    small = evolve_settings.model_copy(update={"evolve_max_skill_chars": 500})

    status, found = run(db, small, user.id, name)

    assert status == "no_improvement" and "over the 500 a candidate may have" in found.summary
    assert found.model_calls == 0 and model.requests == []
