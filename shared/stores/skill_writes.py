"""The write actions of `skill_manage`: create, edit, patch, delete (archive), write_file, remove_file.

Every action is taken as a `writer` (agent, review or user) and follows the same rules: the content
is checked and scanned before anything is written, the skill's flock is held from reading to the
atomic replace (so two processes patching one skill never lose an update), bundled skills are
read-only, and a background review may only change skills a review created (the agent's own), never
a pinned one, and only a file it loaded with skill_view in the same review (Hermes Agent's read-before-write).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from shared.files.atomic import atomic_write
from shared.errors import Conflict, Forbidden, HermesError, InvalidInput, NotFound
from shared.models.skills import SkillOrigin, SkillState, SkillWriter
from shared.stores import skill_records
from shared.files.skills import (
    inside,
    read_text,
    remove_file,
    skill_lock,
    support_files,
)
from shared.files.skill_format import (
    MAX_FILES_PER_SKILL,
    SKILL_FILE,
    check_name,
    check_support_path,
    check_support_size,
    parse_skill_md,
)
from shared.stores.skills import Located, SkillStore, refuse_threats
from shared.textmatch import MatchFailure, find_and_replace

PREVIEW_CHARS = 500
ACTIONS = ("create", "edit", "patch", "delete", "write_file", "remove_file")


def argument_text(value: Any, argument: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not allow_empty and not value):
        raise InvalidInput(f"{argument} is required{'' if allow_empty else ' and may not be empty'}.",
                           code="skill_argument_missing")
    return value


def _patch_refused(failure: MatchFailure, name: str, relative: str, current: str) -> InvalidInput:
    """The matcher's refusal in skill terms; a miss also shows how the file starts (Hermes Agent's preview)."""
    if failure.kind == "no_match":
        return InvalidInput(f"old_string was not found in {relative} of skill {name!r}; copy it from skill_view. "
                            f"{failure.message}\nThe file starts:\n{current[:PREVIEW_CHARS]}",
                            code="skill_patch_no_match")
    return InvalidInput(f"{relative} of skill {name!r}: {failure.message}", code=f"skill_patch_{failure.kind}")


def _done(message: str, name: str, **extra: Any) -> dict[str, Any]:
    return {"success": True, "message": message, "name": name, **extra}


class SkillEditor:
    """One writer's changes to one user's skills."""

    def __init__(self, store: SkillStore, writer: SkillWriter | str,
                 viewed: frozenset[tuple[str, str]] | None = None) -> None:
        self.store = store
        self.writer = SkillWriter(writer)
        self.viewed = viewed  # (skill, file) pairs loaded with skill_view; None: no read-before-write rule

    @property
    def origin(self) -> SkillOrigin:
        """Whose a new skill is: a review's is the agent's, anything asked for in the foreground is the user's."""
        return SkillOrigin.agent if self.writer is SkillWriter.review else SkillOrigin.user

    def authorize(self, skill: Located) -> None:
        """Refuse archived and bundled skills; a review may only change unpinned skills of its own kind."""
        if skill.state is SkillState.archived:
            raise NotFound(f"The skill {skill.name!r} is archived; the user can restore it.", code="skill_not_found")
        if skill.origin is SkillOrigin.bundled:
            raise Forbidden(f"{skill.name!r} is a bundled skill and read-only; create your own skill with another "
                            "name instead.", code="skill_read_only")
        if self.writer is not SkillWriter.review:
            return
        if skill.origin is not SkillOrigin.agent:
            raise Forbidden(f"A background review may only change skills a review created; {skill.name!r} is the "
                            "user's. Mention what should change in your summary instead.", code="skill_read_only")
        if skill.pinned:
            raise Forbidden(f"The skill {skill.name!r} is pinned: the user keeps it as it is. Nothing was written.",
                            code="skill_pinned")

    def require_read(self, skill: Located, relative: str) -> None:
        """The read-before-write rule: a review rewrites only a file it loaded with skill_view in this review."""
        if self.viewed is None or (skill.name, relative) in self.viewed:
            return
        how = f"skill_view(name={skill.name!r})" if relative == SKILL_FILE else \
            f"skill_view(name={skill.name!r}, file_path={relative!r})"
        raise Forbidden(f"Load the current {relative} of skill {skill.name!r} with {how} before changing it; "
                        "nothing was written.", code="skill_not_read")

    @contextmanager
    def writable(self, name: str) -> Iterator[Located]:
        """Hold the skill's lock and yield it once this writer may change it."""
        self.store.get(name)  # an invalid name or a missing skill is refused before any lock file is made
        with skill_lock(self.store.roots, name):
            skill = self.store.get(name)
            self.authorize(skill)
            yield skill

    def apply(self, action: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run one skill_manage action with its arguments (the tool and an approved staged write share this)."""
        name = args.get("name")
        if action == "create":
            return self.create(name, args.get("content"))
        if action == "edit":
            return self.edit(name, args.get("content"))
        if action == "patch":
            return self.patch(name, args.get("old_string"), args.get("new_string"),
                              replace_all=bool(args.get("replace_all")), file_path=args.get("file_path"))
        if action == "delete":
            return self.delete(name)
        if action == "write_file":
            return self.write_file(name, args.get("file_path"), args.get("file_content"))
        if action == "remove_file":
            return self.remove_file(name, args.get("file_path"))
        raise InvalidInput(f"Unknown action {action!r}; use one of: {', '.join(ACTIONS)}.",
                           code="skill_action_invalid")

    def changed(self, skill: Located) -> None:
        skill_records.changed(self.store.db, self.store.user_id, skill.name, skill.origin.value)

    def create(self, name: str, content: Any) -> dict[str, Any]:
        check_name(name)
        content = argument_text(content, "content")
        parse_skill_md(content, name)
        refuse_threats(SKILL_FILE, content)
        self.store.create_folder(name, {SKILL_FILE: content}, self.origin, self.writer)
        return _done(f"Skill '{name}' created.", name)

    def edit(self, name: str, content: Any) -> dict[str, Any]:
        content = argument_text(content, "content")
        parse_skill_md(content, check_name(name))
        refuse_threats(SKILL_FILE, content)
        with self.writable(name) as skill:
            self.require_read(skill, SKILL_FILE)
            atomic_write(skill.path / SKILL_FILE, content)
        self.changed(skill)
        return _done(f"Skill '{name}' updated (full rewrite).", name)

    def patch(self, name: str, old_string: Any, new_string: Any, *, replace_all: bool = False,
              file_path: str | None = None) -> dict[str, Any]:
        """Replace the one match of `old_string` (every match with `replace_all`) in SKILL.md or a file.

        Matching is the patch tool's fuzzy chain (shared.textmatch): whitespace, indentation, escapes
        and typography may differ, but the match must still be unique unless `replace_all`.
        """
        old_string = argument_text(old_string, "old_string")
        new_string = argument_text(new_string, "new_string", allow_empty=True)
        relative = SKILL_FILE if file_path in (None, "", SKILL_FILE) else check_support_path(file_path)
        with self.writable(name) as skill:
            target = skill.path / SKILL_FILE if relative == SKILL_FILE else inside(skill.path, relative)
            self.require_read(skill, relative)
            current = read_text(target, relative)
            try:
                result = find_and_replace(current, old_string, new_string, replace_all=replace_all)
            except MatchFailure as failure:
                raise _patch_refused(failure, name, relative, current) from None
            self.check_patched(name, relative, result.content)
            atomic_write(target, result.content)
        self.changed(skill)
        replaced = result.count
        return _done(f"Patched {relative} in skill '{name}' ({replaced} replacement{'s' if replaced > 1 else ''}).",
                     name)

    @staticmethod
    def check_patched(name: str, relative: str, updated: str) -> None:
        if relative == SKILL_FILE:
            try:
                parse_skill_md(updated, name)
            except HermesError as exc:
                raise type(exc)(f"The patch would break SKILL.md: {exc.message} Nothing was written.",
                                code=exc.code) from exc
        else:
            check_support_size(relative, updated)
        refuse_threats(relative, updated)

    def delete(self, name: str) -> dict[str, Any]:
        """Move the skill to the archive; nothing is ever removed, and a pinned skill stays."""
        with self.writable(name) as skill:
            if skill.pinned:
                raise Conflict(f"The skill {name!r} is pinned; the user must unpin it before it can be deleted.",
                               code="skill_pinned")
            self.store.archive_locked(skill)
        return _done(f"Skill '{name}' archived: it left the skill list and the user can restore it.", name)

    def write_file(self, name: str, file_path: Any, file_content: Any) -> dict[str, Any]:
        relative = check_support_path(file_path)
        file_content = argument_text(file_content, "file_content", allow_empty=True)
        check_support_size(relative, file_content)
        refuse_threats(relative, file_content)
        with self.writable(name) as skill:
            target = inside(skill.path, relative)
            if target.is_dir():
                raise InvalidInput(f"{relative} is a folder; name a file inside it.", code="skill_path_invalid")
            if target.exists():
                self.require_read(skill, relative)
            if not target.exists() and len(support_files(skill.path)) >= MAX_FILES_PER_SKILL:
                raise InvalidInput(f"Skill {name!r} already holds {MAX_FILES_PER_SKILL} supporting files, the "
                                   "limit; remove one first.", code="skill_too_many_files")
            atomic_write(target, file_content)
        self.changed(skill)
        return _done(f"Wrote {relative} in skill '{name}'.", name, file_path=relative)

    def remove_file(self, name: str, file_path: Any) -> dict[str, Any]:
        relative = check_support_path(file_path)
        with self.writable(name) as skill:
            target = inside(skill.path, relative)
            if not target.is_file():
                available = ", ".join(support_files(skill.path)) or "none"
                raise NotFound(f"No file {relative!r} in skill {name!r}. Available files: {available}.",
                               code="skill_file_not_found")
            self.require_read(skill, relative)
            remove_file(skill.path, target)
        self.changed(skill)
        return _done(f"Removed {relative} from skill '{name}'.", name, file_path=relative)
