"""The reviewer's consolidate_skills task: runs the curator's model pass only when CURATOR_CONSOLIDATE is on."""

from __future__ import annotations

import json

from services.worker.consolidate import consolidate_user
from services.worker.tasks import consolidate_skills
from shared.stores import skill_staged
from shared.stores.skill_writes import SkillEditor
from shared.stores.skills import SkillStore
from tests.fakes.model import text
from tests.support.factories import make_user

BODY = "---\nname: {0}\ndescription: Back up the user's photos to the NAS.\n---\n1. Mount the NAS share.\n" \
       "2. Rsync the photo folder with --archive.\n3. Check the file count matches.\n"
UMBRELLA = BODY.format("photo-backups").replace("Back up", "Back up (any way)")


def test_the_task_is_off_by_default_and_refuses_a_malformed_payload(db, settings, model):
    alice = make_user(db)
    assert consolidate_skills.run(user_id=alice.id) == "skipped: CURATOR_CONSOLIDATE is off"
    assert consolidate_skills.run(user_id="x" * 500) == ""
    assert consolidate_skills.run(user_id=alice.id, extra=1) == ""
    assert model.requests == []


def test_with_the_setting_on_it_stages_an_umbrella_and_skips_a_user_that_is_gone(db, settings, model):
    alice = make_user(db)
    store = SkillStore.for_user(db, settings, alice.id)
    for name in ("backup-photos", "photos-backup"):
        SkillEditor(store, "review").create(name, BODY.format(name))
    model.script(text(json.dumps({"merge": True, "name": "photo-backups", "merged": ["backup-photos", "photos-backup"],
                                  "content": UMBRELLA, "reason": "the same procedure twice"})))
    on = settings.model_copy(update={"curator_consolidate": True})

    summary = consolidate_user(on, alice.id)

    assert summary.startswith("consolidation: 1 overlapping group(s), 1 staged, 0 declined, 1 model call(s)")
    [pending] = skill_staged.list_pending(db, alice.id)
    assert (pending.action, pending.name) == ("consolidate", "photo-backups")
    assert consolidate_user(on, "usr_missing") == "skipped: no such user"
