"""Backups (compressed, newest 5 kept), the ledger, restoring one change, and a plan that changes nothing."""

from __future__ import annotations

import tarfile
from datetime import timedelta

import pytest

from shared import clock
from shared.curation.passes import plan, run_pass
from shared.errors import HermesError
from shared.stores import curator
from shared.files import backups as curator_backups
from shared.stores.curator_moves import restore
from shared.stores.skill_writes import SkillEditor

DAY = timedelta(days=1)


def code_of(call) -> str:
    with pytest.raises(HermesError) as caught:
        call()
    return caught.value.code


def test_backups_are_compressed_copies_of_the_skills_folder_and_only_the_newest_five_stay(settings, skills):
    mine = skills()
    mine.agent("brew-tea")
    (mine.store.roots.user / ".archive" / "old-tea").mkdir(parents=True)
    (mine.store.roots.user / ".archive" / "old-tea" / "SKILL.md").write_text("archived")

    made = [curator_backups.snapshot(settings.data_dir, mine.user.id, clock.utcnow() + n * DAY, keep=5)
            for n in range(7)]

    kept = curator_backups.backups(settings.data_dir, mine.user.id)
    assert [p.relative_to(settings.data_dir).as_posix() for p in kept] == made[2:]
    with tarfile.open(kept[-1], "r:gz") as tar:
        names = tar.getnames()
    assert {"skills/brew-tea/SKILL.md", "skills/.archive/old-tea/SKILL.md"} <= set(names)
    assert not any(".locks" in n for n in names)


def test_a_pass_with_nothing_to_change_takes_no_backup_but_is_logged(db, settings, skills):
    mine = skills()
    mine.agent("fresh")
    report = run_pass(db, settings, mine.user.id, clock.utcnow())
    assert (report.summary, report.backup_path) == ("no changes", None)
    assert curator_backups.backups(settings.data_dir, mine.user.id) == []
    assert [(r.kind.value, r.summary, r.transitions) for r in curator.runs(db, mine.user.id)] == [
        ("curation", "no changes", [])]


def test_planning_changes_nothing(db, settings, skills):
    mine = skills()
    mine.agent("old-notes", "older-notes")
    clock.advance(31 * DAY)
    mine.use("old-notes")
    clock.advance(15 * DAY)

    planned = plan(db, settings, mine.user.id, clock.utcnow())

    assert [(t.skill, t.from_state.value, t.to_state.value, t.reason) for t in planned] == [
        ("old-notes", "active", "stale", "unused for 15 days (stale after 14 days)"),
        ("older-notes", "active", "archived", "unused for 46 days (archive after 30 days)")]
    assert mine.states() == {**mine.states(), "old-notes": "active", "older-notes": "active"}
    assert curator.runs(db, mine.user.id) == [] and curator.state(db, mine.user.id) is None
    assert curator_backups.backups(settings.data_dir, mine.user.id) == []


def test_restoring_a_stale_skill_makes_it_active_and_restarts_its_clock(db, settings, skills):
    mine = skills()
    mine.agent("old-notes")
    clock.advance(15 * DAY)
    run_pass(db, settings, mine.user.id, clock.utcnow())
    assert mine.states()["old-notes"] == "stale"

    undone = restore(mine.store, "old-notes", clock.utcnow())
    assert [(t.from_state, t.to_state) for t in undone.transitions] == [("stale", "active")]
    assert undone.transitions[0].reason.startswith("restored by the user: undoes cur_")
    assert mine.states()["old-notes"] == "active" and "old-notes" in mine.index()

    clock.advance(13 * DAY)  # 28 days unused, but restored 13 days ago
    assert run_pass(db, settings, mine.user.id, clock.utcnow()).summary == "no changes"
    clock.advance(DAY)
    assert run_pass(db, settings, mine.user.id, clock.utcnow()).summary == "1 marked stale"


def test_only_a_change_the_curator_made_can_be_restored(db, settings, skills):
    mine = skills()
    mine.agent("fresh")
    mine.installed("mine")
    mine.store.archive("mine")
    assert code_of(lambda: restore(mine.store, "fresh", clock.utcnow())) == "nothing_to_restore"
    assert code_of(lambda: restore(mine.store, "mine", clock.utcnow())) == "nothing_to_restore"
    assert code_of(lambda: restore(mine.store, "no-such-skill", clock.utcnow())) == "skill_not_found"

    clock.advance(31 * DAY)
    run_pass(db, settings, mine.user.id, clock.utcnow())
    restore(mine.store, "fresh", clock.utcnow())
    assert code_of(lambda: restore(mine.store, "fresh", clock.utcnow())) == "nothing_to_restore"


def test_a_skill_restored_through_the_skills_api_is_not_archived_again_at_once(db, settings, skills):
    mine = skills()
    mine.agent("old-notes")
    clock.advance(31 * DAY)
    run_pass(db, settings, mine.user.id, clock.utcnow())
    mine.store.restore("old-notes")  # POST /v1/skills/old-notes/restore: no ledger row of its own

    clock.advance(7 * DAY)
    noted = run_pass(db, settings, mine.user.id, clock.utcnow())
    assert [(t.skill, t.from_state.value, t.to_state.value) for t in noted.transitions] == [
        ("old-notes", "archived", "active")]
    assert mine.states()["old-notes"] == "active"

    clock.advance(14 * DAY)
    assert run_pass(db, settings, mine.user.id, clock.utcnow()).summary == "1 marked stale"


def test_a_stale_skill_changed_since_is_reactivated_by_the_next_pass(db, settings, skills):
    mine = skills()
    mine.agent("old-notes")
    clock.advance(15 * DAY)
    run_pass(db, settings, mine.user.id, clock.utcnow())
    clock.advance(DAY)
    SkillEditor(mine.store, "review").patch("old-notes", "Do the", "Always do the")
    assert mine.states()["old-notes"] == "stale", "a change is activity, though not a use"

    clock.advance(6 * DAY)
    report = run_pass(db, settings, mine.user.id, clock.utcnow())
    assert report.summary == "1 reactivated" and mine.states()["old-notes"] == "active"
    assert report.transitions[0].reason == "active again: last activity 6 days ago"


def test_a_change_and_its_ledger_row_commit_together(db, settings, skills, monkeypatch):
    """A reader never sees a skill marked stale without the row that says why (nor the reverse)."""
    mine = skills()
    mine.agent("old-notes")
    clock.advance(15 * DAY)

    def full_disk(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(curator, "add_transition", full_disk)
    with pytest.raises(OSError):
        run_pass(db, settings, mine.user.id, clock.utcnow())
    assert mine.states()["old-notes"] == "active", "the state change rolled back with its ledger row"
    assert curator.last_change(db, mine.user.id, "old-notes") is None

    monkeypatch.undo()
    report = run_pass(db, settings, mine.user.id, clock.utcnow())
    assert report.summary == "1 marked stale" and mine.states()["old-notes"] == "stale"
    assert curator.last_change(db, mine.user.id, "old-notes").to_state == "stale"
