"""Skills as one user sees them: the bundled ones plus their own, never another user's.

Disk says what exists and what each skill contains; the `skills` table says where it came from and
how it is used (see shared.models.skills). A skill's folder location decides whether it is archived
(`.archive/`); for a bundled skill, which is shared and read-only, archiving only hides it for this
user. Every change to one skill's folder happens under that skill's flock.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from sqlmodel import Session

from shared.files.atomic import atomic_write
from shared.config import Settings
from shared.db import Database
from shared.errors import Conflict, HermesError, InvalidInput, NotFound
from shared.models.skills import (
    SkillDetail,
    SkillInstall,
    SkillOrigin,
    SkillRecord,
    SkillState,
    SkillSummary,
    SkillWriter,
)
from shared.security.skill_checks import check_skill_text
from shared.stores import skill_records
from shared.files.skills import (
    SkillRoots,
    discard_dir,
    inside,
    is_skill_dir,
    move_dir,
    read_text,
    skill_dirs,
    skill_lock,
    support_files,
)
from shared.files.skill_format import (
    MAX_FILES_PER_SKILL,
    SKILL_FILE,
    FrontMatter,
    check_name,
    check_support_path,
    check_support_size,
    index_description,
    is_valid_name,
    parse_skill_md,
    parse_skill_md_cached,
)


@dataclass(frozen=True)
class Located:
    """Where one skill of this user lives and what state it is in."""

    name: str
    path: Path
    origin: SkillOrigin
    state: SkillState
    record: SkillRecord | None  # this skill's row, when one exists for its origin

    @property
    def created_by(self) -> str | None:
        """Who wrote it; a folder put in place by hand counts as the user's own."""
        if self.record is not None:
            return self.record.created_by
        return None if self.origin is SkillOrigin.bundled else SkillWriter.user.value

    @property
    def pinned(self) -> bool:
        return bool(self.record and self.record.pinned)


def refuse_threats(label: str, text: str) -> None:
    """Refuse text the threat scanner or the skill checks flag, naming the finding."""
    finding = check_skill_text(text)
    if finding is not None:
        raise InvalidInput(f"Refused {label}: {finding.message} (pattern '{finding.pattern_id}', category "
                           f"'{finding.category}'). Nothing was written.", code="skill_blocked")


class SkillStore:
    """One user's view of the skills, and the operations the api and the tools share."""

    def __init__(self, db: Database, roots: SkillRoots, user_id: str) -> None:
        self.db = db
        self.roots = roots
        self.user_id = user_id

    @classmethod
    def for_user(cls, db: Database, settings: Settings, user_id: str) -> "SkillStore":
        return cls(db, SkillRoots.for_user(settings.data_dir, settings.bundled_skills_dir, user_id), user_id)

    # -- finding skills -----------------------------------------------------------------------------

    def locate(self, name: str, records: dict[str, SkillRecord] | None = None) -> Located | None:
        """The skill of this name: the user's own first (active, then archived), then the bundled one."""
        check_name(name)
        row = records.get(name) if records is not None else skill_records.record(self.db, self.user_id, name)
        bundled_row = row if row is not None and row.origin == SkillOrigin.bundled.value else None
        own = row if bundled_row is None else None
        origin = SkillOrigin(own.origin) if own is not None else SkillOrigin.user
        if is_skill_dir(self.roots.active_dir(name)):
            state = SkillState.stale if own is not None and own.state == SkillState.stale.value else SkillState.active
            return Located(name, self.roots.active_dir(name), origin, state, own)
        if is_skill_dir(self.roots.archived_dir(name)):
            return Located(name, self.roots.archived_dir(name), origin, SkillState.archived, own)
        if is_skill_dir(self.roots.bundled_dir(name)):
            state = SkillState(bundled_row.state) if bundled_row is not None else SkillState.active
            return Located(name, self.roots.bundled_dir(name), SkillOrigin.bundled, state, bundled_row)
        return None

    def get(self, name: str) -> Located:
        found = self.locate(name)
        if found is None:
            raise NotFound(f"No skill named {name!r}. Use skills_list to see the skills there are.",
                           code="skill_not_found")
        return found

    def usable(self, name: str) -> Located:
        """A skill the agent may read: anything but archived."""
        found = self.get(name)
        if found.state is SkillState.archived:
            raise NotFound(f"The skill {name!r} is archived; the user can restore it.", code="skill_not_found")
        return found

    def visible(self, *, include_archived: bool) -> list[Located]:
        """Every skill this user can see, by name."""
        names = {p.name for root in (self.roots.user, self.roots.archive, self.roots.bundled)
                 for p in skill_dirs(root) if is_valid_name(p.name)}  # a hand-made "My Notes/" is no skill
        rows = skill_records.records(self.db, self.user_id)
        found = [self.locate(name, rows) for name in sorted(names)]
        return [s for s in found if s is not None and (include_archived or s.state is not SkillState.archived)]

    # -- reading ------------------------------------------------------------------------------------

    @staticmethod
    def front_matter(skill: Located) -> FrontMatter | HermesError:
        """The parsed SKILL.md, or the error that makes it unusable (a hand edit gone wrong)."""
        try:
            return parse_skill_md_cached(read_text(skill.path / SKILL_FILE, SKILL_FILE), skill.name)
        except HermesError as exc:
            return exc

    def summary(self, skill: Located) -> SkillSummary:
        front = self.front_matter(skill)
        description = front.description if isinstance(front, FrontMatter) else f"[invalid SKILL.md: {front.message}]"
        row = skill.record
        return SkillSummary(
            name=skill.name, description=description, origin=skill.origin, state=skill.state,
            created_by=skill.created_by, pinned=skill.pinned,
            view_count=row.view_count if row else 0, use_count=row.use_count if row else 0,
            created_at=row.created_at if row else None, updated_at=row.updated_at if row else None,
            last_used_at=row.last_used_at if row else None)

    def summaries(self, *, include_archived: bool = True) -> list[SkillSummary]:
        return [self.summary(s) for s in self.visible(include_archived=include_archived)]

    def detail(self, name: str) -> SkillDetail:
        """A skill in any state, with SKILL.md and its file list (reading it is not a use)."""
        skill = self.get(name)
        front = self.front_matter(skill)
        extra = {"version": front.version, "license": front.license, "metadata": front.metadata} \
            if isinstance(front, FrontMatter) else {}
        return SkillDetail(**self.summary(skill).model_dump(), content=read_text(skill.path / SKILL_FILE, SKILL_FILE),
                           files=support_files(skill.path), **extra)

    def read_file(self, name: str, file_path: str) -> str:
        """One supporting file of a usable skill; a missing one lists what there is."""
        skill = self.usable(name)
        relative = check_support_path(file_path)
        target = inside(skill.path, relative)
        if not target.is_file():
            available = ", ".join(support_files(skill.path)) or "none"
            raise NotFound(f"No file {relative!r} in skill {name!r}. Available files: {available}.",
                           code="skill_file_not_found")
        return target.read_text(encoding="utf-8", errors="replace")

    def mark_used(self, skill: Located) -> None:
        """Count a view and a use; a stale skill becomes active again."""
        skill_records.viewed(self.db, self.user_id, skill.name, skill.origin.value)

    def index(self) -> list[tuple[str, str]]:
        """(name, description cut to 60 chars) of every unarchived skill with a valid SKILL.md, by name.

        A stale skill stays: stale is the curator's label, not a hiding place (as in Hermes Agent).
        """
        entries = []
        for skill in self.visible(include_archived=False):
            front = self.front_matter(skill)
            if isinstance(front, FrontMatter):
                entries.append((skill.name, index_description(front.description)))
        return entries

    # -- lifecycle: pin, archive, restore ----------------------------------------------------------

    def set_pinned(self, name: str, pinned: bool) -> SkillSummary:
        skill = self.get(name)
        skill_records.set_pinned(self.db, self.user_id, name, skill.origin.value, pinned)
        return self.summary(self.get(name))

    def archive(self, name: str) -> SkillSummary:
        """Move a skill to `.archive/` (a bundled one is only hidden for this user); archiving twice is a no-op."""
        self.get(name)  # an invalid name or a missing skill is refused before any lock file is made
        with skill_lock(self.roots, name):
            skill = self.get(name)
            if skill.state is not SkillState.archived:
                self.archive_locked(skill)
            return self.summary(self.get(name))

    def archive_locked(self, skill: Located, also: Callable[[Session], None] | None = None) -> None:
        """Archive a skill whose lock the caller holds (`also`: more rows in the state's transaction)."""
        if skill.origin is not SkillOrigin.bundled:
            move_dir(skill.path, self.roots.archived_dir(skill.name))
        skill_records.set_state(self.db, self.user_id, skill.name, skill.origin.value, SkillState.archived, also)

    def restore(self, name: str) -> SkillSummary:
        """Bring an archived skill back as active; restoring an unarchived one is a no-op."""
        self.get(name)  # an invalid name or a missing skill is refused before any lock file is made
        with skill_lock(self.roots, name):
            skill = self.get(name)
            if skill.state is SkillState.archived:
                if skill.origin is not SkillOrigin.bundled:
                    move_dir(skill.path, self.roots.active_dir(name))
                skill_records.set_state(self.db, self.user_id, name, skill.origin.value, SkillState.active)
            return self.summary(self.get(name))

    def set_stale(self, name: str) -> SkillSummary:
        """Take an active skill out of the prompt index; it stays viewable and any use reactivates it."""
        self.get(name)
        with skill_lock(self.roots, name):
            skill = self.get(name)
            if skill.state is not SkillState.active:
                raise Conflict(f"Only an active skill can become stale; {name!r} is {skill.state.value}.",
                               code="invalid_state")
            skill_records.set_state(self.db, self.user_id, name, skill.origin.value, SkillState.stale)
            return self.summary(self.get(name))

    # -- creating ---------------------------------------------------------------------------------

    def install(self, body: SkillInstall) -> SkillDetail:
        """Install a skill folder as the user: checked and scanned whole before anything is written."""
        name = check_name(body.name)
        parse_skill_md(body.content, name)
        if len(body.files) > MAX_FILES_PER_SKILL:
            raise InvalidInput(f"A skill may hold at most {MAX_FILES_PER_SKILL} supporting files.",
                               code="skill_too_many_files")
        files = {SKILL_FILE: body.content}
        for raw_path, text in body.files.items():
            path = check_support_path(raw_path)
            check_support_size(path, text)
            files[path] = text
        for path, text in files.items():
            refuse_threats(path, text)
        self.create_folder(name, files, SkillOrigin.user, SkillWriter.user)
        return self.detail(name)

    def create_folder(self, name: str, files: dict[str, str], origin: SkillOrigin, writer: SkillWriter) -> None:
        """Write a new skill folder whole (built aside, then renamed into place) and record who made it."""
        check_name(name)
        with skill_lock(self.roots, name):
            self.refuse_taken(name)
            staging = self.roots.user / f".tmp-{name}-{uuid.uuid4().hex[:8]}"
            try:
                for relative, text in files.items():
                    atomic_write(staging / relative, text)
                move_dir(staging, self.roots.active_dir(name))
            finally:
                discard_dir(staging)
            try:
                skill_records.created(self.db, self.user_id, name, origin.value, writer.value)
            except BaseException:
                discard_dir(self.roots.active_dir(name))  # no provenance, no skill: the caller may retry
                raise

    def refuse_taken(self, name: str) -> None:
        existing = self.locate(name)
        if existing is None:
            return
        if existing.state is SkillState.archived:
            raise Conflict(f"An archived skill is named {name!r}; choose another name (the user can restore "
                           "the archived one).", code="skill_archived")
        where = "a bundled skill" if existing.origin is SkillOrigin.bundled else "a skill"
        raise Conflict(f"There is already {where} named {name!r}; patch or edit it, or choose another name.",
                       code="skill_exists")

