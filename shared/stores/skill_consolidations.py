"""Consolidations: an umbrella skill that replaces overlapping agent-made skills, staged, then applied whole.

A proposal is checked when it is staged (the umbrella parses, passes the skill scan and its name is free;
every merged skill is the agent's own, unpinned and not archived; none is already in another pending
consolidation) and kept as ONE pending skill write (action `consolidate`) whose diff shows the umbrella
created and each merged SKILL.md leaving. Approving re-checks everything under the user's curator lock,
archives the merged skills and creates the umbrella, each step with its ledger row in one merge run; a step
that fails undoes the earlier ones, so an approval applies entirely or not at all. Nothing is deleted:
`curator restore UMBRELLA` (curator_moves) archives the umbrella and brings the merged skills back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlmodel import Session, select

from shared.config import Settings
from shared.db import Database
from shared.errors import Conflict, InvalidInput
from shared.files.skill_format import SKILL_FILE, check_name, parse_skill_md
from shared.files.skills import discard_dir, read_text, skill_lock
from shared.ids import new_id
from shared.models.curator import RunKind
from shared.models.reviews import Review, ReviewStatus
from shared.models.skills import SkillOrigin, SkillStagedWrite, SkillState, SkillWriter
from shared.stores import curator
from shared.stores.curator_moves import UMBRELLA_NEW, curator_lock, move
from shared.stores.skills import Located, SkillStore, refuse_threats
from shared.textmatch.diff import whole_diff

CONSOLIDATE = "consolidate"
PENDING, APPROVED = "pending", "approved"  # skill_staged's statuses (that module imports this one)
APPLYING = re.compile(r"^applying (ssw_[0-9a-z]+):")
REASON_CHARS = 500


@dataclass(frozen=True)
class Proposal:
    """An umbrella skill (its name and SKILL.md) that replaces `merged`, and why."""

    umbrella: str
    content: str
    merged: tuple[str, ...]
    reason: str = ""


def eligible(skill: Located) -> bool:
    """A skill a consolidation may merge: the agent's own (a review made it), unpinned, not archived."""
    return skill.origin is SkillOrigin.agent and not skill.pinned and skill.state is not SkillState.archived


def _pending(s: Session, user_id: str, now: datetime) -> set[str]:
    query = select(SkillStagedWrite).where(SkillStagedWrite.user_id == user_id, SkillStagedWrite.action == CONSOLIDATE,
                                           SkillStagedWrite.status == PENDING, SkillStagedWrite.expires_at > now)
    return {name for row in s.exec(query) for name in [row.name, *(row.arguments.get("merged") or [])]}


def pending_members(db: Database, user_id: str, now: datetime) -> set[str]:
    """Every skill already named by a pending, unexpired consolidation of this user (never proposed twice)."""
    with db.read() as s:
        return _pending(s, user_id, now)


def review_notes(db: Database, user_id: str, limit: int = 50) -> list[str]:
    """The replies of this user's latest finished reviews: where a review names overlapping skills."""
    query = (select(Review.summary).where(Review.user_id == user_id, Review.status == ReviewStatus.completed.value,
                                          Review.summary.is_not(None))
             .order_by(Review.finished_at.desc()).limit(limit))
    with db.read() as s:
        return [summary for summary in s.exec(query) if summary]


def _merged_names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(n, str) for n in value):
        raise InvalidInput("merged must be a list of skill names.", code="consolidation_invalid")
    names = tuple(dict.fromkeys(check_name(n) for n in value))
    if len(names) < 2:
        raise InvalidInput("A consolidation merges at least two skills.", code="consolidation_invalid")
    return names


def _check(store: SkillStore, proposal: Proposal) -> list[Located]:
    """Refuse what could not apply now; returns the merged skills."""
    name = check_name(proposal.umbrella)
    merged = _merged_names(proposal.merged)
    if name in merged:
        raise InvalidInput("The umbrella needs a new name, not one of the merged skills'.",
                           code="consolidation_invalid")
    if not isinstance(proposal.content, str):
        raise InvalidInput("The umbrella's SKILL.md must be text.", code="consolidation_invalid")
    parse_skill_md(proposal.content, name)
    refuse_threats(SKILL_FILE, proposal.content)
    store.refuse_taken(name)
    skills = [store.get(n) for n in merged]
    for skill in skills:
        if not eligible(skill):
            raise Conflict(f"{skill.name!r} is not a skill the curator may merge (only unpinned, unarchived skills "
                           "a review made).", code="consolidation_refused")
    return skills


def stage(store: SkillStore, settings: Settings, proposal: Proposal, now: datetime) -> SkillStagedWrite:
    """Keep a checked proposal as one pending skill write with its diff; refuses one that overlaps a pending one."""
    skills = _check(store, proposal)
    name, merged = proposal.umbrella, tuple(s.name for s in skills)
    diff = whole_diff("", proposal.content, "/dev/null", f"b/{name}/{SKILL_FILE}") + "".join(
        whole_diff(read_text(s.path / SKILL_FILE, SKILL_FILE), "", f"a/{s.name}/{SKILL_FILE}",
                   f"b/.archive/{s.name}/{SKILL_FILE} (archived)") for s in skills)
    summary = (f"consolidate {', '.join(repr(n) for n in merged)} into {name!r} — the {len(merged)} are archived "
               f"({len(proposal.content)} chars)")
    row = SkillStagedWrite(id=new_id("ssw"), user_id=store.user_id, writer=SkillWriter.review.value,
                           action=CONSOLIDATE, name=name, summary=summary, diff=diff, created_at=now,
                           arguments={"content": proposal.content, "merged": list(merged),
                                      "reason": str(proposal.reason)[:REASON_CHARS]},
                           expires_at=now + timedelta(seconds=settings.skill_staged_ttl_seconds))
    with store.db.write() as s:  # a user's passes run one at a time (consolidation.PASS_LOCK): this check holds
        busy = _pending(s, store.user_id, now) & {name, *merged}
        if busy:
            raise Conflict(f"{', '.join(sorted(busy))} already wait in another consolidation.",
                           code="consolidation_pending")
        s.add(row)
    return row


def apply(store: SkillStore, staged_id: str, umbrella: str, arguments: dict[str, Any],
          now: datetime) -> dict[str, Any]:
    """Approve: archive the merged skills, then create the umbrella, all or nothing, recorded as one merge run.

    The umbrella's ledger row is written last: a run that has it is complete. A run left unfinished by a
    process that died mid-way is undone by `settle` the next time anyone takes the user's curator lock.
    """
    proposal = Proposal(umbrella, arguments.get("content"), _merged_names(arguments.get("merged")),
                        str(arguments.get("reason") or ""))
    with curator_lock(store):
        settle(store, now)
        skills = _check(store, proposal)
        names = ", ".join(s.name for s in skills)
        run_id = curator.start_run(store.db, store.user_id, RunKind.merge, now,
                                   summary=f"applying {staged_id}: {names} into {umbrella}")
        done: list[Located] = []
        try:
            for skill in skills:
                if not move(store, run_id, skill.name, (skill.state, SkillState.archived),
                            f"merged into {umbrella}", now, eligible):
                    raise Conflict(f"{skill.name!r} changed while the consolidation was applied; nothing was merged.",
                                   code="consolidation_refused")
                done.append(skill)
            store.create_folder(umbrella, {SKILL_FILE: proposal.content}, SkillOrigin.agent, SkillWriter.review)
        except BaseException:
            _undo(store, run_id, umbrella, [(s.name, s.state) for s in done], now)
            raise
        curator.record_transition(store.db, run_id, store.user_id, umbrella, UMBRELLA_NEW, SkillState.active.value,
                                  f"umbrella of {names}", now)
        curator.finish_run(store.db, run_id, now, f"merged {names} into {umbrella}", pass_done=False)
    return {"success": True, "name": umbrella, "archived": [s.name for s in skills], "run_id": run_id,
            "message": f"Created {umbrella!r} and archived {names}; `hstack curator restore {umbrella}` undoes it."}


def _undo(store: SkillStore, run_id: str, umbrella: str, done: list[tuple[str, SkillState]], now: datetime) -> None:
    """Bring back the skills an abandoned approval had archived already, each with its ledger row."""
    for name, state in reversed(done):
        move(store, run_id, name, (SkillState.archived, state), f"merge into {umbrella} abandoned", now,
             lambda found: found.state is SkillState.archived)
    curator.finish_run(store.db, run_id, now, f"merge into {umbrella} abandoned", pass_done=False)


def settle(store: SkillStore, now: datetime) -> int:
    """Finish or undo merges whose process died mid-apply (kill -9); the caller holds the curator lock.

    Under that lock an unfinished merge run cannot be running. With its umbrella row it was complete and is
    only closed; without, its archived skills come back, a half-made umbrella folder is discarded (it never
    went live through an applied merge, as a failed create is), and its staged write is pending again.
    """
    settled = 0
    for run in curator.unfinished_runs(store.db, store.user_id, RunKind.merge):
        rows = curator.transitions_of(store.db, run.id)
        staged_id = APPLYING.match(run.summary or "")
        if any(row.from_state == UMBRELLA_NEW for row in rows):
            curator.finish_run(store.db, run.id, now, run.summary.replace("applying", "applied", 1), pass_done=False)
            settled += 1
            continue
        archived = [(row.skill, SkillState(row.from_state)) for row in rows if row.to_state == SkillState.archived.value
                    and curator.is_last_change(store.db, row)]
        umbrella = _staged(store, staged_id.group(1)) if staged_id else None
        if umbrella is not None:
            _discard_half_made(store, umbrella.name, run.started_at)
        _undo(store, run.id, umbrella.name if umbrella else "?", archived, now)
        if umbrella is not None:
            with store.db.write() as s:
                s.execute(update(SkillStagedWrite).where(SkillStagedWrite.id == umbrella.id,
                                                         SkillStagedWrite.status == APPROVED)
                          .values(status=PENDING, decided_at=None))
        settled += 1
    return settled


def _staged(store: SkillStore, staged_id: str) -> SkillStagedWrite | None:
    with store.db.read() as s:
        row = s.get(SkillStagedWrite, staged_id)
    return row if row is not None and row.user_id == store.user_id else None


def _discard_half_made(store: SkillStore, name: str, since: datetime) -> None:
    """Remove the umbrella folder a dead apply created, only if it is that apply's (made since the run began)."""
    with skill_lock(store.roots, name):
        skill = store.locate(name)
        if skill is None or skill.state is SkillState.archived or skill.origin is SkillOrigin.bundled:
            return
        if skill.record is None:  # died between the folder's rename and its row: the folder's time tells
            ours = (skill.path / SKILL_FILE).stat().st_mtime >= since.timestamp()
        else:
            ours = skill.origin is SkillOrigin.agent and skill.record.created_at >= since
        if ours:
            discard_dir(skill.path)
