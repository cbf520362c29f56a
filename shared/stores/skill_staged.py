"""Skill writes staged for approval (SKILL_WRITE_APPROVAL): check, stage with a diff, list, decide, expire.

A write is checked when it is staged, under the writer's rules (a review's provenance, pinned and
read-before-write guards included), so the model hears of a refusal at once and a person only ever
sees writes that could apply. Approving replays it through `SkillEditor.apply` as the same writer,
so the rules of the moment apply again; a replay they refuse leaves the write pending. A curator's
consolidation (action `consolidate`, shared.stores.skill_consolidations) is staged and applied by its own rules.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlmodel import select

from shared.clock import utcnow
from shared.config import Settings
from shared.db import Database
from shared.errors import Conflict, InvalidInput, InvalidState, NotFound
from shared.ids import new_id
from shared.models.skills import SkillStagedWrite
from shared.files.skills import inside, read_text
from shared.files.skill_format import SKILL_FILE, check_name, check_support_path, check_support_size, parse_skill_md
from shared.stores import skill_consolidations
from shared.stores.skill_writes import ACTIONS, SkillEditor, argument_text
from shared.stores.skills import SkillStore, refuse_threats
from shared.textmatch import MatchFailure, find_and_replace
from shared.textmatch.diff import whole_diff

PENDING, APPROVED, DENIED, EXPIRED = "pending", "approved", "denied", "expired"
DESCRIPTION_CHARS = 140


def stage(editor: SkillEditor, settings: Settings, action: str, args: dict[str, Any],
          session_id: str | None = None) -> dict[str, Any]:
    """Check the write as it would run now and keep it, with its diff, for a person; the tool's answer."""
    row = planned_row(editor, settings, action, args, session_id)
    with editor.store.db.write() as s:
        s.add(row)
    return {"success": True, "staged": True, "pending_id": row.id,
            "message": f"Staged for the user's approval: {row.summary}. Nothing is written until they approve."}


def planned_row(editor: SkillEditor, settings: Settings, action: str, args: dict[str, Any],
                session_id: str | None = None) -> SkillStagedWrite:
    """The checked write with its diff, not yet saved: a caller may save it in its own transaction."""
    relative, before, after = _planned(editor, action, args)
    name = args.get("name", "")
    diff = whole_diff(before, after, f"a/{name}/{relative}", f"b/{name}/{relative}")
    now = utcnow()
    return SkillStagedWrite(id=new_id("ssw"), user_id=editor.store.user_id, session_id=session_id,
                            writer=editor.writer.value, action=action, name=args["name"],
                            arguments={k: v for k, v in args.items() if k != "action"},
                            summary=_summary(action, args["name"], relative, before, after), diff=diff,
                            created_at=now, expires_at=now + timedelta(seconds=settings.skill_staged_ttl_seconds))


def _planned(editor: SkillEditor, action: str, args: dict[str, Any]) -> tuple[str, str, str]:
    """(file, its text now, its text after) of the write; refuses what the writer's rules would refuse."""
    if action not in ACTIONS:
        raise InvalidInput(f"Unknown action {action!r}; use one of: {', '.join(ACTIONS)}.",
                           code="skill_action_invalid")
    store, name = editor.store, check_name(args.get("name"))
    if action == "create":
        content = argument_text(args.get("content"), "content")
        parse_skill_md(content, name)
        refuse_threats(SKILL_FILE, content)
        store.refuse_taken(name)
        return SKILL_FILE, "", content
    skill = store.get(name)
    editor.authorize(skill)
    if action == "delete":
        if skill.pinned:
            raise Conflict(f"The skill {name!r} is pinned; the user must unpin it before it can be deleted.",
                           code="skill_pinned")
        return SKILL_FILE, read_text(skill.path / SKILL_FILE, SKILL_FILE), ""
    if action == "edit":
        content = argument_text(args.get("content"), "content")
        parse_skill_md(content, name)
        refuse_threats(SKILL_FILE, content)
        editor.require_read(skill, SKILL_FILE)
        return SKILL_FILE, read_text(skill.path / SKILL_FILE, SKILL_FILE), content
    file_path = args.get("file_path")
    relative = SKILL_FILE if action == "patch" and file_path in (None, "", SKILL_FILE) else check_support_path(file_path)
    target = skill.path / SKILL_FILE if relative == SKILL_FILE else inside(skill.path, relative)
    if action == "write_file":
        content = argument_text(args.get("file_content"), "file_content", allow_empty=True)
        check_support_size(relative, content)
        refuse_threats(relative, content)
        if target.exists():
            editor.require_read(skill, relative)
        return relative, read_text(target, relative) if target.is_file() else "", content
    editor.require_read(skill, relative)
    current = read_text(target, relative)
    if action == "remove_file":
        return relative, current, ""
    try:
        result = find_and_replace(current, argument_text(args.get("old_string"), "old_string"),
                                  argument_text(args.get("new_string"), "new_string", allow_empty=True),
                                  replace_all=bool(args.get("replace_all")))
    except MatchFailure as failure:
        raise InvalidInput(f"{relative} of skill {name!r}: {failure.message}",
                           code=f"skill_patch_{failure.kind}") from None
    editor.check_patched(name, relative, result.content)
    return relative, current, result.content


def _summary(action: str, name: str, relative: str, before: str, after: str) -> str:
    """One line, as Hermes Agent's gist: no model call."""
    if action == "create":
        try:
            description = parse_skill_md(after, name).description
        except Exception:  # checked already; a summary never fails the stage
            description = ""
        return f"create {name!r} — {description[:DESCRIPTION_CHARS]} ({len(after)} chars)"
    if action == "delete":
        return f"archive {name!r}"
    added = sum(1 for line in after.splitlines() if line not in before.splitlines())
    removed = sum(1 for line in before.splitlines() if line not in after.splitlines())
    return f"{action} {name!r} {relative} (+{added}/-{removed} lines)"


def list_pending(db: Database, user_id: str) -> list[SkillStagedWrite]:
    """This user's undecided, unexpired skill writes, oldest first."""
    query = (select(SkillStagedWrite)
             .where(SkillStagedWrite.user_id == user_id, SkillStagedWrite.status == PENDING,
                    SkillStagedWrite.expires_at > utcnow())
             .order_by(SkillStagedWrite.created_at, SkillStagedWrite.id))
    with db.read() as s:
        return list(s.exec(query))


def decide(db: Database, settings: Settings, user_id: str, staged_id: str,
           approve: bool) -> tuple[SkillStagedWrite, dict[str, Any] | None]:
    """Approve (replay as its writer) or deny one pending write; 404 for another user's, 409 once decided.

    A replay the rules now refuse raises their error and leaves the write pending.
    """
    now = utcnow()
    with db.write() as s:
        row = s.exec(select(SkillStagedWrite).where(SkillStagedWrite.id == staged_id).with_for_update()).first()
        if row is None or row.user_id != user_id:
            raise NotFound("No such staged skill write.", code="staged_write_not_found")
        if row.status == PENDING and row.expires_at <= now:
            row.status, row.decided_at = EXPIRED, now
            s.add(row)
        decided = None if row.status == PENDING else row.status
        if decided is None:  # claimed before it runs, so two approvals never apply it twice
            row.status, row.decided_at = (APPROVED if approve else DENIED), now
            s.add(row)
    if decided is not None:
        raise InvalidState(f"This staged skill write was already {decided}.", code="staged_write_decided")
    if not approve:
        return row, None
    store = SkillStore.for_user(db, settings, user_id)
    try:
        if row.action == skill_consolidations.CONSOLIDATE:
            result = skill_consolidations.apply(store, row.id, row.name, row.arguments, now)
        else:
            result = SkillEditor(store, row.writer).apply(row.action, {"name": row.name, **row.arguments})
    except BaseException:
        with db.write() as s:
            s.execute(update(SkillStagedWrite).where(SkillStagedWrite.id == row.id)
                      .values(status=PENDING, decided_at=None))
        raise
    return row, result


def expire_staged(db: Database, now: datetime) -> int:
    """Mark every pending skill write whose time ran out as expired; the curator's sweep calls this."""
    with db.write() as s:
        result = s.execute(update(SkillStagedWrite)
                           .where(SkillStagedWrite.status == PENDING, SkillStagedWrite.expires_at <= now)
                           .values(status=EXPIRED, decided_at=now))
        return result.rowcount or 0
