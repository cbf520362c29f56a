"""The curator's rules, pure: when a user's pass is due, and what a pass does to one skill.

Every decision takes `now` as an argument (from shared.clock), so tests move time instead of
waiting for it. "Unused" counts from a skill's last activity (created, changed or used) or from the
curator's own last reactivation of it (a restore), whichever is later.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from shared.config import Settings
from shared.models.skills import SkillState

ACTIVE, STALE, ARCHIVED = SkillState.active, SkillState.stale, SkillState.archived
RESTORED_OUTSIDE = "restored outside the curator; unused time counts from now"


@dataclass(frozen=True)
class Policy:
    """The thresholds, from Settings."""

    interval: timedelta
    min_idle: timedelta
    stale_after: timedelta
    archive_after: timedelta

    @classmethod
    def of(cls, settings: Settings) -> "Policy":
        return cls(interval=timedelta(hours=settings.curator_interval_hours),
                   min_idle=timedelta(hours=settings.curator_min_idle_hours),
                   stale_after=timedelta(days=settings.curator_stale_after_days),
                   archive_after=timedelta(days=settings.curator_archive_after_days))


@dataclass(frozen=True)
class Candidate:
    """What the rules know of one agent-created skill."""

    name: str
    state: SkillState
    pinned: bool
    last_activity_at: datetime
    ledger_state: SkillState | None = None  # where the curator's ledger last left it
    ledger_at: datetime | None = None


@dataclass(frozen=True)
class Transition:
    """One change a pass makes; `moves` is False when it only notes a change made elsewhere."""

    skill: str
    from_state: SkillState
    to_state: SkillState
    reason: str
    moves: bool = True


def _days(delta: timedelta) -> str:
    """Whole days for ledger reasons ("unused for 31 days"); a fraction only when there is one."""
    days = delta.total_seconds() / 86400
    shown = f"{int(days)}" if days >= 1 else f"{days:.2g}"
    return f"{shown} day" if shown == "1" else f"{shown} days"


def _span(delta: timedelta) -> str:
    """A wait, to the minute: "6 days 23 h", "2 h", "1 h 59 min", "0 min"."""
    minutes = max(0, int(delta.total_seconds() // 60))
    days, rest = divmod(minutes, 1440)
    hours, minutes = divmod(rest, 60)
    if days:
        return f"{days} day{'s' if days != 1 else ''}" + (f" {hours} h" if hours else "")
    if hours:
        return f"{hours} h" + (f" {minutes} min" if minutes else "")
    return f"{minutes} min"


def transition(skill: Candidate, now: datetime, policy: Policy) -> Transition | None:
    """The one change this pass makes to `skill`, if any; pinned and archived skills are left alone."""
    if skill.pinned or skill.state is ARCHIVED:
        return None
    if skill.ledger_state is ARCHIVED:
        return Transition(skill.name, ARCHIVED, skill.state, RESTORED_OUTSIDE, moves=False)
    anchor = skill.last_activity_at
    if skill.ledger_state is ACTIVE and skill.ledger_at is not None:
        anchor = max(anchor, skill.ledger_at)
    unused = now - anchor
    if unused >= policy.archive_after:
        return Transition(skill.name, skill.state, ARCHIVED,
                          f"unused for {_days(unused)} (archive after {_days(policy.archive_after)})")
    if unused >= policy.stale_after and skill.state is ACTIVE:
        return Transition(skill.name, ACTIVE, STALE,
                          f"unused for {_days(unused)} (stale after {_days(policy.stale_after)})")
    if unused < policy.stale_after and skill.state is STALE:
        return Transition(skill.name, STALE, ACTIVE, f"active again: last activity {_days(unused)} ago")
    return None


def wait_reason(last_pass_at: datetime, last_turn_at: datetime | None, now: datetime,
                policy: Policy) -> str | None:
    """Why a user's pass is not due now, or None when it is (interval passed and the user idle)."""
    since_pass = now - last_pass_at
    if since_pass < policy.interval:
        return f"last pass {_span(since_pass)} ago; the next after {_span(policy.interval)}"
    if last_turn_at is not None and now - last_turn_at < policy.min_idle:
        quiet = _span(policy.min_idle)
        return f"the user had a turn {_span(now - last_turn_at)} ago; a pass waits for {quiet} of quiet"
    return None
