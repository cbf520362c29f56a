"""Through real Celery: a curation pass on queue `curator` sends consolidate_skills to queue `review`, whose
worker stages the umbrella (CURATOR_CONSOLIDATE=true); the beat's own task never calls the model."""

from __future__ import annotations

from datetime import timedelta

import pytest

import services.curator.tasks  # noqa: F401  (registers the curator tasks on the shared app)
import services.worker.tasks  # noqa: F401  (registers consolidate_skills on the shared app)
from shared import clock
from shared.config import get_settings
from shared.queue.app import enqueue
from shared.queue.names import CURATE_SKILLS
from shared.queue.payloads import CurateSkills
from shared.stores import curator, skill_staged
from shared.stores.skill_writes import SkillEditor
from tests.services.curator.test_consolidate import UMBRELLA, merge_all, tea
from tests.support.waiting import wait_until
from tests.support.worker import inprocess_worker


@pytest.fixture
def consolidating(monkeypatch):
    """CURATOR_CONSOLIDATE=true for the tasks, which read the process's settings. The one Settings object is
    changed, never replaced: clearing get_settings' cache would leave every later test's `settings` fixture
    patching an object the code no longer reads."""
    current = get_settings()
    monkeypatch.setattr(current, "curator_consolidate", True)
    return current


def test_a_pass_on_the_curator_queue_leads_to_an_umbrella_staged_by_the_reviewer(db, model, skills, consolidating):
    mine = skills()
    editor = SkillEditor(mine.store, "review")
    editor.create("brew-green-tea", tea("brew-green-tea", "green", 80, 2))
    editor.create("brew-black-tea", tea("brew-black-tea", "black", 95, 4))
    model.on("Overlapping skills", merge_all)
    curator.seed(db, mine.user.id, clock.utcnow())
    clock.advance(timedelta(days=8))

    with inprocess_worker(queues=("curator", "review"), concurrency=2):
        enqueue(CURATE_SKILLS, CurateSkills(user_id=mine.user.id))
        [pending] = wait_until(lambda: skill_staged.list_pending(db, mine.user.id), 30,
                               what="the consolidation to be staged")

    assert (pending.action, pending.name) == ("consolidate", UMBRELLA)
    kinds = [r.kind.value for r in curator.runs(db, mine.user.id)]
    assert kinds == ["consolidation", "curation"]
    assert mine.states()["brew-green-tea"] == "active"  # staged, not applied
