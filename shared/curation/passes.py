"""One curation pass over one user's agent-created skills: plan, back up, move, record.

The beat's check calls `curate_if_due` (the interval and idle gates, first sight seeds the clock);
`hstack curator run` calls `run_pass` directly (an operator asked: no gates) or `plan` for a dry run.
Only agent-created skills are candidates; pinned ones are exempt; bundled and user-installed skills
are never looked at. Nothing is ever deleted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from shared.config import Settings
from shared.curation.rules import Candidate, Policy, Transition, transition, wait_reason
from shared.db import Database
from shared.models.curator import CuratorTransition, RunKind
from shared.models.skills import SkillOrigin, SkillState
from shared.stores import curator, skill_consolidations, skill_records
from shared.files import backups as curator_backups
from shared.stores.curator_moves import curator_lock, move
from shared.stores.skills import Located, SkillStore

VERBS = {SkillState.stale: "marked stale", SkillState.archived: "archived", SkillState.active: "reactivated"}
SEEDED = "first seen: the clock starts now, the first pass comes one interval later"


@dataclass
class PassReport:
    """What a pass did for one user, or why none ran."""

    user_id: str
    transitions: list[Transition] = field(default_factory=list)
    run_id: str | None = None
    backup_path: str | None = None
    skipped: str | None = None  # why no pass ran

    @property
    def summary(self) -> str:
        if self.skipped:
            return f"skipped: {self.skipped}"
        counts = {state: sum(t.to_state is state for t in self.transitions) for state in VERBS}
        return ", ".join(f"{n} {VERBS[state]}" for state, n in counts.items() if n) or "no changes"


def candidate(skill: Located, last: CuratorTransition | None) -> Candidate | None:
    """What the rules need to know of a skill and of the ledger's last row of it; None: never the curator's."""
    if skill.origin is not SkillOrigin.agent or skill.record is None:
        return None
    return Candidate(name=skill.name, state=skill.state, pinned=skill.pinned,
                     last_activity_at=skill.record.last_activity_at,
                     ledger_state=None if last is None else SkillState(last.to_state),
                     ledger_at=None if last is None else last.at)


def plan(db: Database, settings: Settings, user_id: str, now: datetime) -> list[Transition]:
    """The transitions a pass would make now, by skill name; changes nothing."""
    store = SkillStore.for_user(db, settings, user_id)
    policy = Policy.of(settings)
    ledger = curator.last_changes(db, user_id)
    rows = {row.name: row for row in skill_records.agent_created(db, user_id)}
    planned = []
    for name in rows:
        skill = store.locate(name, rows)
        found = candidate(skill, ledger.get(name)) if skill is not None else None
        change = transition(found, now, policy) if found is not None else None
        if change is not None:
            planned.append(change)
    return planned


def run_pass(db: Database, settings: Settings, user_id: str, now: datetime) -> PassReport:
    """A pass now, whatever the gates say: a backup first when anything will change."""
    store = SkillStore.for_user(db, settings, user_id)
    with curator_lock(store):
        return _run_locked(store, settings, now)


def curate_if_due(db: Database, settings: Settings, user_id: str, now: datetime) -> PassReport:
    """The beat's entry: seed a user first seen, else run the pass when the interval passed and the user is idle."""
    store = SkillStore.for_user(db, settings, user_id)
    with curator_lock(store):
        state = curator.state(db, user_id)
        if state is None:
            curator.seed(db, user_id, now)
            return PassReport(user_id, skipped=SEEDED)
        wait = wait_reason(state.last_pass_at, curator.last_turn_at(db, user_id, now), now, Policy.of(settings))
        if wait is not None:
            return PassReport(user_id, skipped=wait)
        return _run_locked(store, settings, now)


def _run_locked(store: SkillStore, settings: Settings, now: datetime) -> PassReport:
    skill_consolidations.settle(store, now)  # a merge whose process died mid-apply is undone first
    report = PassReport(store.user_id)
    planned = plan(store.db, settings, store.user_id, now)
    if planned:
        report.backup_path = curator_backups.snapshot(settings.data_dir, store.user_id, now,
                                                      settings.curator_backups_keep)
    report.run_id = curator.start_run(store.db, store.user_id, RunKind.curation, now, report.backup_path)
    policy = Policy.of(settings)
    for change in planned:
        def still_due(skill: Located, change: Transition = change) -> bool:
            found = candidate(skill, curator.last_change(store.db, store.user_id, skill.name))
            return found is not None and transition(found, now, policy) == change
        if move(store, report.run_id, change.skill, (change.from_state, change.to_state), change.reason, now,
                still_due, moves=change.moves):
            report.transitions.append(change)
    curator.finish_run(store.db, report.run_id, now, report.summary, pass_done=True)
    return report
