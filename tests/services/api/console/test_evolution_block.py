"""/learning's skill evolution block: start a run, see its scores and diff, approve it into the skill, restore."""

from __future__ import annotations

from shared.llm import get_llm
from shared.queue.names import EVOLVE_SKILL
from shared.stores import evolution_runs
from shared.stores.skill_writes import SkillEditor
from shared.stores.skills import SkillStore
from services.worker.evolution.run import run_evolution
from tests.services.api.console.conftest import Browser
from tests.support.evolution import NEEDED, WEAK, script_rubric, session_that_loaded
from tests.support.factories import make_user


def test_a_proposal_approved_in_the_console_becomes_the_skill_and_the_ledger_restores_the_old_one(
        signed_in: Browser, db, settings, user, model, enqueued):
    store = SkillStore.for_user(db, settings, user.id)
    SkillEditor(store, "review").create("ship-billing", WEAK.format("ship-billing"))
    for n in range(6):
        session_that_loaded(db, user.id, "ship-billing", f"ship billing {n}", NEEDED)
    script_rubric(model)

    started = signed_in.post_form("/learning", "/learning/evolution", {"skill": "ship-billing"})
    assert started.status_code == 303
    [payload] = [p for name, p, _ in enqueued.calls if name == EVOLVE_SKILL]
    page = signed_in.get("/learning").text
    assert "Evolution of ship-billing queued" in page and "badge-queued" in page and "<progress" in page

    assert run_evolution(db, settings, get_llm(settings), payload["run_id"], "reviewer-test") == "proposed"
    page = signed_in.get("/learning").text
    assert "badge-proposed" in page and "proposal pending" in page and "held-out 0.0 → 1.0" in page
    assert "+- drain the queue" in page
    skill_file = store.get("ship-billing").path / "SKILL.md"
    assert "drain the queue" not in skill_file.read_text()

    approved = signed_in.post_form("/learning", f"/learning/evolution/{payload['run_id']}/approve", {})
    assert approved.status_code == 303
    assert "- drain the queue" in skill_file.read_text() and "## Steps" in skill_file.read_text()
    assert "now has the evolved text" in signed_in.get("/learning").text

    restored = signed_in.post_form("/learning", f"/learning/evolution/{payload['run_id']}/restore", {})
    assert restored.status_code == 303
    assert skill_file.read_text() == WEAK.format("ship-billing")
    page = signed_in.get("/learning").text
    assert "Restored the previous text of ship-billing" in page and "/restore\" class" not in page
    again = signed_in.post_form("/learning", f"/learning/evolution/{payload['run_id']}/restore", {})
    assert again.status_code == 303 and "already rolled back" in signed_in.get("/learning").text


def test_another_users_run_is_a_404_in_the_console(browser: Browser, db, settings, user):
    store = SkillStore.for_user(db, settings, user.id)
    SkillEditor(store, "review").create("theirs", WEAK.format("theirs"))
    run = evolution_runs.start(db, settings, user.id, "theirs")
    browser.sign_in(make_user(db).key)
    for action in ("cancel", "approve", "restore"):
        assert browser.post_form("/learning", f"/learning/evolution/{run.id}/{action}", {}).status_code == 404
    assert run.id not in browser.get("/learning").text
