"""The real curator process (Celery beat + worker) started 31 days in the future archives an unused
agent skill on its own schedule, leaves the pinned one alone, and keeps a backup and the ledger."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared import clock
from shared.db import get_database
from shared.stores import curator, skill_records, users
from shared.files import backups as curator_backups
from shared.files.skills import SkillRoots
from shared.stores.skill_writes import SkillEditor
from shared.stores.skills import SkillStore
from tests.support.processes import Stack
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.once]  # process behaviour: see tests/conftest.py

SKILL = "---\nname: {0}\ndescription: The {0} procedure.\n---\n1. Do it.\n"


def test_a_curator_process_living_31_days_ahead_archives_an_unused_skill(settings):
    stack = Stack(model_url="http://127.0.0.1:9/v1",  # the curator never calls the model
                  env_overrides={"CURATOR_CHECK_SECONDS": "0.5",
                                 "HSTACK_CLOCK_OFFSET_SECONDS": str(int(timedelta(days=31).total_seconds()))})
    with stack:
        db = get_database(stack.database_url)
        user = users.create_user(db, "curated")
        store = SkillStore(db, SkillRoots.for_user(stack.data_dir, settings.bundled_skills_dir, user.id), user.id)
        for name in ("old-notes", "kept-notes"):
            SkillEditor(store, "review").create(name, SKILL.format(name))
        store.set_pinned("kept-notes", True)
        curator.seed(db, user.id, clock.utcnow())  # seen today: to the curator, 31 days ago

        stack.start_curator()
        wait_until(lambda: skill_records.record(db, user.id, "old-notes").state == "archived", timeout=30,
                   what="the curator process to archive old-notes")

        assert (store.roots.archive / "old-notes" / "SKILL.md").is_file()
        assert skill_records.record(db, user.id, "kept-notes").state == "active"
        [run] = curator.runs(db, user.id)
        assert [(t.skill, t.to_state) for t in run.transitions] == [("old-notes", "archived")]
        assert run.started_at - clock.utcnow() > timedelta(days=30), "the process's clock was moved"
        assert len(curator_backups.backups(stack.data_dir, user.id)) == 1
