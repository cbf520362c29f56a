"""The skill store: who sees what, provenance and usage rows, archive and restore, the index, links."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest

from shared import clock
from shared.errors import HermesError
from shared.models.skills import SkillInstall, SkillState
from shared.stores import skill_records
from shared.files.skills import SkillRoots
from shared.stores.skill_writes import SkillEditor
from shared.stores.skills import SkillStore
from tests.support.factories import make_user


def skill_md(name: str, description: str = "Brew a good cup of tea.", body: str = "1. Boil water.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


@pytest.fixture
def bundled(tmp_path):
    root = tmp_path / "bundled"
    for name in ("house-style", "old-habit"):
        (root / name).mkdir(parents=True)
        (root / name / "SKILL.md").write_text(skill_md(name, f"The bundled {name} skill."))
    return root


@pytest.fixture
def stores(db, tmp_data_dir, bundled):
    """A store per new user, sharing one DATA_DIR and one bundled folder."""
    def make() -> SkillStore:
        user = make_user(db)
        return SkillStore(db, SkillRoots.for_user(tmp_data_dir, bundled, user.id), user.id)
    return make


def code_of(call) -> str:
    with pytest.raises(HermesError) as caught:
        call()
    return caught.value.code


def test_a_user_sees_bundled_skills_and_their_own_never_another_users(stores, tmp_data_dir):
    alice, bob = stores(), stores()
    SkillEditor(alice, "agent").create("brew-tea", skill_md("brew-tea"))
    bob.install(SkillInstall(name="bobs-notes", content=skill_md("bobs-notes", "Bob's own.")))

    assert [(s.name, s.origin.value, s.created_by) for s in alice.summaries()] == [
        ("brew-tea", "user", "agent"), ("house-style", "bundled", None), ("old-habit", "bundled", None)]
    assert "bobs-notes" not in [s.name for s in alice.summaries()]
    assert code_of(lambda: alice.detail("bobs-notes")) == "skill_not_found"
    assert code_of(lambda: SkillEditor(alice, "agent").patch("bobs-notes", "Bob", "Eve")) == "skill_not_found"
    assert (alice.roots.user / "brew-tea" / "SKILL.md").is_file()
    assert alice.roots.user == tmp_data_dir / "users" / alice.user_id / "skills"


def test_provenance_and_usage_are_recorded(stores):
    store = stores()
    before = clock.utcnow()
    SkillEditor(store, "review").create("brew-tea", skill_md("brew-tea"))
    row = skill_records.record(store.db, store.user_id, "brew-tea")
    assert (row.origin, row.created_by, row.state, row.pinned) == ("agent", "review", "active", False)
    assert row.created_at >= before and (row.view_count, row.use_count, row.last_used_at) == (0, 0, None)

    for _ in range(2):
        store.mark_used(store.get("brew-tea"))
    store.mark_used(store.get("house-style"))

    row = skill_records.record(store.db, store.user_id, "brew-tea")
    assert (row.view_count, row.use_count) == (2, 2) and row.last_used_at >= before
    bundled_row = skill_records.record(store.db, store.user_id, "house-style")
    assert (bundled_row.origin, bundled_row.created_by, bundled_row.use_count) == ("bundled", None, 1)
    assert row.last_activity_at == row.last_used_at


def test_archive_moves_the_folder_and_restore_brings_it_back(stores):
    store = stores()
    SkillEditor(store, "agent").create("brew-tea", skill_md("brew-tea"))

    archived = store.archive("brew-tea")
    assert archived.state is SkillState.archived
    assert not (store.roots.user / "brew-tea").exists()
    assert (store.roots.archive / "brew-tea" / "SKILL.md").read_text() == skill_md("brew-tea")
    assert skill_records.record(store.db, store.user_id, "brew-tea").archived_at is not None
    assert store.archive("brew-tea").state is SkillState.archived  # twice is a no-op
    assert "brew-tea" not in dict(store.index())
    assert code_of(lambda: store.usable("brew-tea")) == "skill_not_found"
    assert code_of(lambda: SkillEditor(store, "agent").create("brew-tea", skill_md("brew-tea"))) == "skill_archived"

    restored = store.restore("brew-tea")
    assert restored.state is SkillState.active and (store.roots.user / "brew-tea" / "SKILL.md").is_file()
    assert skill_records.record(store.db, store.user_id, "brew-tea").archived_at is None
    assert "brew-tea" in dict(store.index())


def test_archiving_a_bundled_skill_hides_it_for_that_user_only(stores):
    alice, bob = stores(), stores()

    alice.archive("old-habit")

    assert alice.detail("old-habit").state is SkillState.archived
    assert (alice.roots.bundled / "old-habit" / "SKILL.md").is_file()  # shared and read-only: never moved
    assert "old-habit" not in dict(alice.index()) and "old-habit" in dict(bob.index())
    assert alice.restore("old-habit").state is SkillState.active


def test_a_stale_skill_stays_in_the_index_and_a_view_makes_it_active(stores):
    """A stale skill left the index, so learned procedures quietly vanished (Hermes Agent keeps them)."""
    store = stores()
    SkillEditor(store, "review").create("brew-tea", skill_md("brew-tea"))

    store.set_stale("brew-tea")
    assert store.detail("brew-tea").state is SkillState.stale
    assert "brew-tea" in dict(store.index())
    assert code_of(lambda: store.set_stale("brew-tea")) == "invalid_state"

    store.mark_used(store.usable("brew-tea"))  # still viewable while stale
    assert store.detail("brew-tea").state is SkillState.active
    assert "brew-tea" in dict(store.index())


def test_pinning_is_recorded_per_user(stores):
    alice, bob = stores(), stores()
    assert alice.set_pinned("house-style", True).pinned is True
    assert bob.detail("house-style").pinned is False
    assert alice.set_pinned("house-style", False).pinned is False
    assert code_of(lambda: alice.set_pinned("no-such-skill", True)) == "skill_not_found"


def test_the_index_lists_active_skills_by_name_with_cut_descriptions(stores):
    store = stores()
    SkillEditor(store, "agent").create("a-long-one", skill_md("a-long-one", "L" * 61))
    SkillEditor(store, "agent").create("exact", skill_md("exact", "E" * 60))

    assert store.index() == [("a-long-one", "L" * 57 + "..."), ("exact", "E" * 60),
                             ("house-style", "The bundled house-style skill."),
                             ("old-habit", "The bundled old-habit skill.")]


def test_a_hand_broken_skill_is_listed_with_its_problem_but_kept_out_of_the_index(stores):
    store = stores()
    (store.roots.user / "broken").mkdir(parents=True)
    (store.roots.user / "broken" / "SKILL.md").write_text("no front matter at all")
    (store.roots.user / "Not A Name").mkdir()
    (store.roots.user / "Not A Name" / "SKILL.md").write_text(skill_md("not-a-name"))

    listed = {s.name: s for s in store.summaries()}
    assert listed["broken"].description.startswith("[invalid SKILL.md: SKILL.md must start with")
    assert listed["broken"].origin.value == "user"  # a folder put there by hand is the user's own
    assert "broken" not in dict(store.index())
    assert "Not A Name" not in listed  # a folder whose name is no skill name is not a skill


def test_symlinked_skills_and_files_are_invisible_or_refused(stores, tmp_path):
    store = stores()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "SKILL.md").write_text(skill_md("linked"))
    (outside / "secret.txt").write_text("top secret")
    store.roots.user.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, store.roots.user / "linked")
    SkillEditor(store, "agent").create("brew-tea", skill_md("brew-tea"))
    refs = store.roots.user / "brew-tea" / "references"
    refs.mkdir()
    os.symlink(outside / "secret.txt", refs / "leak.md")
    os.symlink(outside, store.roots.user / "brew-tea" / "assets")

    assert "linked" not in [s.name for s in store.summaries()]
    assert code_of(lambda: store.detail("linked")) == "skill_not_found"
    assert code_of(lambda: store.read_file("brew-tea", "references/leak.md")) == "skill_path_invalid"
    assert code_of(lambda: store.read_file("brew-tea", "assets/secret.txt")) == "skill_path_invalid"
    editor = SkillEditor(store, "agent")
    assert code_of(lambda: editor.write_file("brew-tea", "assets/new.md", "x")) == "skill_path_invalid"
    assert code_of(lambda: editor.patch("brew-tea", "top", "no", file_path="references/leak.md")) \
        == "skill_path_invalid"
    assert code_of(lambda: editor.remove_file("brew-tea", "references/leak.md")) == "skill_path_invalid"
    assert store.detail("brew-tea").files == []
    assert (outside / "secret.txt").read_text() == "top secret"


def test_the_activity_clock_follows_the_shared_clock(stores, monkeypatch):
    store = stores()
    SkillEditor(store, "review").create("brew-tea", skill_md("brew-tea"))
    later = clock.utcnow() + timedelta(days=15)
    monkeypatch.setattr(clock, "utcnow", lambda: later)

    store.mark_used(store.get("brew-tea"))

    assert skill_records.record(store.db, store.user_id, "brew-tea").last_activity_at == later
    assert [r.name for r in skill_records.agent_created(store.db, store.user_id)] == ["brew-tea"]


def test_the_index_shows_a_hand_edit_at_once_and_a_broken_edit_every_time(stores):
    """The parsed front matter is remembered by content, so an edit is never hidden behind an old parse."""
    store = stores()
    path = store.roots.user / "brew-tea" / "SKILL.md"
    SkillEditor(store, "agent").create("brew-tea", skill_md("brew-tea", "First words."))
    assert dict(store.index())["brew-tea"] == "First words."

    path.write_text(skill_md("brew-tea", "Second words."))
    assert dict(store.index())["brew-tea"] == "Second words."

    path.write_text("no front matter at all")
    for _ in range(2):
        assert "brew-tea" not in dict(store.index())
        assert {s.name: s for s in store.summaries()}["brew-tea"].description.startswith("[invalid SKILL.md:")
