"""The curator, through the real Celery task on queue `curator`: the clock moves 15 and 31 days, agent
skills go stale then archived, pinned / bundled / user-installed skills are untouched, a restore
brings one back, and every change is in the ledger with a backup taken first."""

from __future__ import annotations

import tarfile
from datetime import timedelta

import services.curator.tasks  # noqa: F401  (registers the curator tasks on the shared app)
from shared import clock
from shared.queue.app import enqueue
from shared.queue.names import CURATE_SKILLS
from shared.queue.payloads import CurateSkills
from shared.stores import curator
from shared.files import backups as curator_backups
from shared.stores.curator_moves import restore
from tests.services.curator.conftest import BUNDLED
from tests.support.waiting import wait_until
from tests.support.worker import inprocess_worker

DAY = timedelta(days=1)


def curate_through_celery(db, user_id: str, passes_before: int | None) -> None:
    """Send the task and wait until the user's state shows it ran (seeded, or one more pass)."""
    enqueue(CURATE_SKILLS, CurateSkills(user_id=user_id))

    def ran():
        state = curator.state(db, user_id)
        if passes_before is None:
            return state is not None
        return state is not None and state.pass_count > passes_before

    wait_until(ran, 20, what="the curation task to run")


def moves(db, user_id: str) -> list[tuple[str, str, str]]:
    runs = curator.runs(db, user_id, limit=50)
    return [(t.skill, t.from_state, t.to_state) for r in reversed(runs) for t in r.transitions]


def test_agent_skills_go_stale_then_archived_and_a_restore_brings_one_back(db, settings, skills):
    mine = skills()
    mine.agent("old-notes", "pinned-notes", "comeback")
    mine.store.set_pinned("pinned-notes", True)
    mine.installed("my-own")
    mine.use(BUNDLED)
    untouched = {"pinned-notes": "active", "my-own": "active", BUNDLED: "active"}
    user_id, skills_dir = mine.user.id, mine.store.roots.user

    with inprocess_worker(queues=("curator",), concurrency=2):
        curate_through_celery(db, user_id, None)  # first sight: the clock starts, nothing is pruned
        assert curator.state(db, user_id).pass_count == 0 and curator.runs(db, user_id) == []

        clock.advance(15 * DAY)
        curate_through_celery(db, user_id, 0)
        assert mine.states() | untouched == mine.states()
        assert {k: mine.states()[k] for k in ("old-notes", "comeback")} == {"old-notes": "stale", "comeback": "stale"}
        assert {"old-notes", "pinned-notes", "my-own", BUNDLED} <= set(mine.index()), "stale stays in the index"
        assert "Do the old-notes thing" in mine.store.detail("old-notes").content, "stale stays viewable"

        clock.advance(5 * DAY)  # day 20: a use makes a stale skill active again
        mine.use("comeback")
        assert mine.states()["comeback"] == "active" and "comeback" in mine.index()

        clock.advance(11 * DAY)  # day 31
        curate_through_celery(db, user_id, 1)

    states = mine.states()
    assert states["old-notes"] == "archived" and states["comeback"] == "active"
    assert states | untouched == states
    assert (skills_dir / ".archive" / "old-notes" / "SKILL.md").is_file() and not (skills_dir / "old-notes").exists()
    assert moves(db, user_id) == [("comeback", "active", "stale"), ("old-notes", "active", "stale"),
                                  ("old-notes", "stale", "archived")]

    runs = curator.runs(db, user_id)
    assert [r.summary for r in runs] == ["1 archived", "2 marked stale"]
    assert all(r.backup_path and (settings.data_dir / r.backup_path).is_file() for r in runs)
    with tarfile.open(settings.data_dir / runs[0].backup_path) as tar:  # taken before old-notes moved
        assert "skills/old-notes/SKILL.md" in tar.getnames()
    assert len(curator_backups.backups(settings.data_dir, user_id)) == 2
    reason = runs[0].transitions[0].reason
    assert reason == "unused for 31 days (archive after 30 days)", reason

    undone = restore(mine.store, "old-notes", clock.utcnow())
    assert [(t.skill, t.from_state, t.to_state) for t in undone.transitions] == [("old-notes", "archived", "active")]
    assert mine.states()["old-notes"] == "active" and "old-notes" in mine.index()
    assert (skills_dir / "old-notes" / "SKILL.md").is_file() and not (skills_dir / ".archive" / "old-notes").exists()
    assert curator.runs(db, user_id)[0].kind.value == "restore"
