"""The curator's changes to skills: a state change or a move to `.archive/`, each with its ledger row,
and the user's rollback of the last one.

Passes and restores of one user are serialized by `curator_lock`; each move holds the skill's own
lock, re-checks that it is still due (a use may have come in meanwhile) and writes its ledger row
before the lock is released. Folders only move (with the skills store's helpers); nothing is ever deleted.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime
from typing import Callable, Iterator

from sqlmodel import Session

from shared.errors import Conflict
from shared.models.curator import RunKind, RunPublic
from shared.models.skills import SkillState
from shared.stores import curator, skill_records
from shared.files.skills import move_dir, named_lock, skill_lock
from shared.stores.skills import Located, SkillStore

LOCK_FILE = "curator.lock"  # never a skill's stripe, so a pass may hold it and then one skill's lock
ROLLBACK = {SkillState.stale, SkillState.archived}
UMBRELLA_NEW = "new"  # the from_state of an umbrella a merge created: restoring it undoes the whole merge


@contextmanager
def curator_lock(store: SkillStore) -> Iterator[None]:
    """Hold the user's curator lock (across processes): one pass or restore at a time."""
    with named_lock(store.roots, LOCK_FILE):
        yield


def move(store: SkillStore, run_id: str, name: str, states: tuple[SkillState, SkillState], reason: str,
         now: datetime, still_due: Callable[[Located], bool], *, moves: bool = True) -> bool:
    """Apply one (from, to) transition if `still_due` agrees under the skill's lock, and record it.

    `moves=False` records a change made elsewhere without touching the skill. False: no longer applies.
    """
    from_state, to_state = states
    with skill_lock(store.roots, name):
        skill = store.locate(name)
        if skill is None or not still_due(skill):
            return False

        def ledger(s: Session) -> None:  # committed with the state, so no reader sees one without the other
            curator.add_transition(s, run_id, store.user_id, name, from_state.value, to_state.value, reason, now)

        if moves and to_state is SkillState.archived:
            store.archive_locked(skill, ledger)
        elif moves:
            if skill.state is SkillState.archived:
                move_dir(skill.path, store.roots.active_dir(name))  # the curator never archives a bundled skill
            skill_records.set_state(store.db, store.user_id, name, skill.origin.value, to_state, ledger)
        else:
            with store.db.write() as s:
                ledger(s)
        return True


def restore(store: SkillStore, name: str, now: datetime) -> RunPublic:
    """Undo the curator's last change to a skill: a stale or archived skill becomes active again."""
    store.get(name)  # an invalid name or a missing skill is refused before any lock file is made
    with curator_lock(store):
        skill = store.get(name)
        last = curator.last_change(store.db, store.user_id, name)
        if last is not None and last.from_state == UMBRELLA_NEW:
            return _undo_merge(store, skill, last.run_id, now)
        if last is None or SkillState(last.to_state) not in ROLLBACK or last.to_state != skill.state.value:
            raise Conflict(f"The curator has no change to undo for {name!r} (it is {skill.state.value}); "
                           "`hstack curator log` lists what it did.", code="nothing_to_restore")
        run_id = curator.start_run(store.db, store.user_id, RunKind.restore, now)
        move(store, run_id, name, (skill.state, SkillState.active), f"restored by the user: undoes {last.run_id}",
             now, lambda found: found.state is skill.state)
        curator.finish_run(store.db, run_id, now, f"restored {name}", pass_done=False)
        return curator.run(store.db, run_id)


def _undo_merge(store: SkillStore, umbrella: Located, merge_run: str, now: datetime) -> RunPublic:
    """Archive the umbrella a merge created and bring back each skill it archived that is still where it left it."""
    reason = f"restored by the user: undoes the merge {merge_run}"
    run_id = curator.start_run(store.db, store.user_id, RunKind.restore, now)
    if umbrella.state is not SkillState.archived:
        move(store, run_id, umbrella.name, (umbrella.state, SkillState.archived), reason, now,
             lambda found: found.state is umbrella.state)
    back = []
    for row in curator.transitions_of(store.db, merge_run):
        if row.to_state != SkillState.archived.value or row.skill == umbrella.name:
            continue
        if curator.is_last_change(store.db, row) and move(
                store, run_id, row.skill, (SkillState.archived, SkillState.active), reason, now,
                lambda found: found.state is SkillState.archived):
            back.append(row.skill)
    summary = f"archived {umbrella.name}; restored {', '.join(back) or 'nothing (each was changed since)'}"
    curator.finish_run(store.db, run_id, now, summary, pass_done=False)
    return curator.run(store.db, run_id)
