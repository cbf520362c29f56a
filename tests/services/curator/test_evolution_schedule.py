"""The optional evolution schedule: off by default; when on, one run per user for the unpinned own or agent
skill with enough evidence, persisted before its id is sent, and not again within the interval."""

from __future__ import annotations

from shared.queue.names import CHECK_EVOLUTION, EVOLVE_SKILL, QUEUE_CURATOR, ROUTES
from shared.queue.schedule import beat_schedule
from shared.stores import evolution_runs
from shared.stores.skill_writes import SkillEditor
from shared.stores.skills import SkillStore
from services.curator.evolution import check
from tests.support.evolution import session_that_loaded
from tests.support.factories import SKILL, make_user


def test_the_schedule_is_off_by_default_and_on_when_hours_are_set(settings):
    assert settings.evolve_schedule_hours == 0
    assert all(entry["task"] != CHECK_EVOLUTION for entry in beat_schedule(settings).values())
    on = beat_schedule(settings.model_copy(update={"evolve_schedule_hours": 24.0}))
    [entry] = [e for e in on.values() if e["task"] == CHECK_EVOLUTION]
    assert entry["schedule"] == 86_400 and entry["options"]["expires"] > 0
    assert ROUTES[CHECK_EVOLUTION]["queue"] == QUEUE_CURATOR


def test_a_check_starts_one_run_for_the_skill_with_enough_evidence_and_skips_pinned_ones(db, settings):
    user = make_user(db)
    store = SkillStore.for_user(db, settings, user.id)
    on = settings.model_copy(update={"evolve_schedule_hours": 24.0, "evolve_min_sessions": 3, "evolve_daily_runs": 50})
    for name in ("well-used", "pinned-one", "rarely-used"):
        SkillEditor(store, "review").create(name, SKILL.format(name))
    store.set_pinned("pinned-one", True)
    for n in range(3):
        session_that_loaded(db, user.id, "well-used", f"task {n}", ["step"])
        session_that_loaded(db, user.id, "pinned-one", f"task {n}", ["step"])
    session_that_loaded(db, user.id, "rarely-used", "task", ["step"])
    sent: list = []

    check(on, lambda name, payload: sent.append((name, payload.model_dump(),
                                                 evolution_runs.load(db, payload.run_id).status)))

    mine = [(name, body, status) for name, body, status in sent
            if evolution_runs.load(db, body["run_id"]).user_id == user.id]
    [(name, body, status_at_send)] = mine
    assert name == EVOLVE_SKILL and status_at_send == "queued"  # committed before its id was sent
    run = evolution_runs.get(db, user.id, body["run_id"])
    assert run.skill == "well-used" and run.trigger == "schedule"

    evolution_runs.cancel(db, user.id, run.id)
    sent.clear()
    check(on, lambda name, payload: sent.append(payload.run_id))
    assert all(evolution_runs.load(db, rid).user_id != user.id for rid in sent)  # not again within the interval
