"""`hstack curator run [--dry-run] [--user NAME]` (local, like migrate), `hstack curator log` and
`hstack curator restore NAME` (through the api)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared import clock
from shared.stores import curator
from shared.files import backups as curator_backups
from shared.stores.skill_writes import SkillEditor
from shared.stores.skills import SkillStore
from tests.support.factories import SKILL, make_user

pytestmark = pytest.mark.usefixtures("real_time")  # the curator reads the clock: see tests/conftest.py


@pytest.fixture
def alice(db, settings):
    user = make_user(db)
    store = SkillStore.for_user(db, settings, user.id)
    for name in ("old-notes", "older-notes", "fresh-notes"):
        SkillEditor(store, "review").create(name, SKILL.format(name))
    store.set_pinned("fresh-notes", True)
    return user, store


def states(store: SkillStore) -> dict[str, str]:
    return {s.name: s.state.value for s in store.summaries() if s.origin.value == "agent"}


def test_a_dry_run_prints_what_a_pass_would_do_and_changes_nothing(hstack, db, settings, alice):
    user, store = alice
    clock.advance(timedelta(days=15))
    store.mark_used(store.get("old-notes"))
    clock.advance(timedelta(days=16))
    before = states(store)

    code, out, _ = hstack("curator", "run", "--dry-run", "--user", user.name)

    assert code == 0 and out.splitlines() == [
        "Dry run: nothing is changed.",
        f"{user.name} ({user.id}): not seen by the curator yet (its first check only starts the clock); "
        "a pass now would make 2 change(s).",
        "    old-notes  active → stale  unused for 16 days (stale after 14 days)",
        "    older-notes  active → archived  unused for 31 days (archive after 30 days)",
    ]
    assert states(store) == before
    assert curator.runs(db, user.id) == [] and curator.state(db, user.id) is None
    assert curator_backups.backups(settings.data_dir, user.id) == []


def test_run_then_log_then_restore(hstack, db, settings, alice):
    user, store = alice
    clock.advance(timedelta(days=31))

    code, out, _ = hstack("curator", "run", "--user", user.name)
    [backup] = curator_backups.backups(settings.data_dir, user.id)
    run_id = curator.runs(db, user.id)[0].id
    assert code == 0 and out.splitlines() == [
        f"{user.name} ({user.id}): pass {run_id}: 2 archived; backup "
        f"{backup.relative_to(settings.data_dir).as_posix()}.",
        "    old-notes  active → archived  unused for 31 days (archive after 30 days)",
        "    older-notes  active → archived  unused for 31 days (archive after 30 days)",
    ]
    assert states(store) == {"old-notes": "archived", "older-notes": "archived", "fresh-notes": "active"}

    code, out, _ = hstack("curator", "log", "--key", user.key)
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("Next pass after ") and "1 pass(es) so far (last: 2 archived)" in lines[0]
    assert run_id in lines[1] and "curation" in lines[1] and "backup users/" in lines[1]
    assert lines[2:] == ["    old-notes  active → archived  unused for 31 days (archive after 30 days)",
                         "    older-notes  active → archived  unused for 31 days (archive after 30 days)"]

    code, out, _ = hstack("curator", "restore", "old-notes", "--key", user.key)
    assert code == 0 and out == f"Restored old-notes: archived → active (restored by the user: undoes {run_id}).\n"
    assert states(store)["old-notes"] == "active"

    code, _, err = hstack("curator", "restore", "old-notes", "--key", user.key)
    assert code == 1 and "nothing_to_restore" in err and "has no change to undo for 'old-notes'" in err


def test_an_unknown_user_is_one_readable_line(hstack):
    code, _, err = hstack("curator", "run", "--dry-run", "--user", "nobody-by-this-name")
    assert code == 1 and err.startswith("hstack: ") and "nobody-by-this-name" in err


def test_without_a_user_every_user_with_agent_skills_is_shown(hstack, alice):
    user, _ = alice
    code, out, _ = hstack("curator", "run", "--dry-run")
    assert code == 0 and f"{user.name} ({user.id}): not seen by the curator yet" in out


def test_run_with_consolidate_stages_an_umbrella_and_says_what_it_cost(hstack, db, settings, model, alice):
    import json

    from shared.stores import skill_staged
    from tests.fakes.model import text

    user, store = alice
    umbrella = SKILL.format("notes")
    model.script(text(json.dumps({"merge": True, "name": "notes", "merged": ["old-notes", "older-notes"],
                                  "content": umbrella, "reason": "one habit"})))

    code, out, _ = hstack("curator", "run", "--user", user.name, "--consolidate")

    [pending] = skill_staged.list_pending(db, user.id)
    assert code == 0 and pending.arguments["merged"] == ["old-notes", "older-notes"]  # fresh-notes is pinned
    lines = out.splitlines()
    assert lines[1].startswith(f"{user.name} ({user.id}): consolidation: 1 overlapping group(s), 1 staged, "
                               "0 declined, 1 model call(s), ")
    assert lines[2].startswith(f"    staged {pending.id}: ")
    assert hstack("curator", "run", "--dry-run", "--consolidate")[0] != 0
