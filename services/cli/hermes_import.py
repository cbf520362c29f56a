"""The stages of `hstack import hermes`: sessions, memory entries, agent-created skills, each with a report."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from shared.config import Settings
from shared.db import Database
from shared.errors import HermesError
from shared.models.skills import SkillOrigin, SkillWriter
from shared.stores import imports
from shared.stores.memory import DUPLICATE_MESSAGE, MemoryRequest, MemoryStore
from shared.files.skill_format import SKILL_FILE, check_name, check_support_path, check_support_size, parse_skill_md
from shared.stores.skills import SkillStore, refuse_threats
from services.cli import hermes_home as hermes

KIND_SESSION, KIND_MEMORY, KIND_SKILL = "hermes-session", "hermes-memory", "hermes-skill"
SOURCE_PREFIX = "hermes"


@dataclass
class Tally:
    """What one stage did."""

    imported: int = 0
    skipped: int = 0
    not_fitting: int = 0
    notes: list[str] = field(default_factory=list)


def digest(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


class HermesImport:
    """The three stages, each printing one line (plus a note per thing it could not import)."""

    def __init__(self, db: Database, settings: Settings, user_id: str, home: Path, out: TextIO) -> None:
        self.db, self.settings, self.user_id, self.home, self.out = db, settings, user_id, home, out

    def run(self) -> None:
        sessions, messages = self.sessions()
        memory = self.memory()
        skills = self.skills()
        self.out.write(
            f"Done: sessions {sessions.imported} imported / {sessions.skipped} skipped; messages "
            f"{messages.imported} imported / {messages.skipped} skipped; memory entries {memory.imported} imported "
            f"/ {memory.skipped} skipped / {memory.not_fitting} not fitting; skills {skills.imported} imported / "
            f"{skills.skipped} skipped.\n")

    def report(self, stage: str, line: str, tally: Tally) -> None:
        self.out.write(f"[{stage}] {line}\n")
        for note in tally.notes:
            self.out.write(f"    {note}\n")

    def sessions(self) -> tuple[Tally, Tally]:
        found, internal = hermes.read_sessions(self.home)
        sessions, messages = Tally(), Tally()
        for source in found:
            result = imports.import_session(
                self.db, self.user_id, KIND_SESSION, source.id, title=source.title,
                source=f"{SOURCE_PREFIX}-{source.source}"[:32], created_at=source.started_at,
                messages=[{"source_id": m.id, "role": m.role, "content": m.content, "tool_calls": m.tool_calls,
                           "tool_call_id": m.tool_call_id, "name": m.name, "created_at": m.at}
                          for m in source.messages])
            sessions.imported += result.created
            sessions.skipped += not result.created
            messages.imported += result.added
            messages.skipped += len(source.messages) - result.added + source.left_out
        sessions.skipped += internal
        line = (f"sessions: {sessions.imported} imported, {sessions.skipped} skipped ({internal} internal to the "
                f"anchor); messages: {messages.imported} imported, {messages.skipped} skipped (already imported, "
                "rewound by the user, or compaction summaries and copies)")
        self.report("1/3", line if (self.home / "state.db").exists() else "sessions: no state.db here", sessions)
        return sessions, messages

    def memory(self) -> Tally:
        store = MemoryStore.for_user(self.settings, self.user_id)
        tally = Tally()
        for target, file_name in hermes.MEMORY_FILES.items():
            for entry in hermes.read_memory(self.home, target):
                self.memory_entry(store, target, file_name, entry, tally)
        self.report("2/3", f"memory: {tally.imported} entry(ies) imported, {tally.skipped} skipped (already there), "
                    f"{tally.not_fitting} not fitting or refused", tally)
        return tally

    def memory_entry(self, store: MemoryStore, target: str, file_name: str, entry: str, tally: Tally) -> None:
        key = digest(target, entry)
        if imports.recorded(self.db, self.user_id, KIND_MEMORY, key) is not None:
            tally.skipped += 1
            return
        result = store.write(MemoryRequest(target=target, action="add", content=entry))
        if not result.ok:
            tally.not_fitting += 1
            reason = "does not fit" if result.code == "memory_over_limit" else "refused"
            why = ". ".join(result.message.split(". ")[:2]).rstrip(".")
            tally.notes.append(f"{file_name} entry {reason} ({why}):")
            tally.notes += [f"      {line}" for line in entry.splitlines()]
            return
        imports.record(self.db, self.user_id, KIND_MEMORY, key, target)
        if result.payload.get("message") == DUPLICATE_MESSAGE:
            tally.skipped += 1
        else:
            tally.imported += 1

    def skills(self) -> Tally:
        tally = Tally()
        store = SkillStore.for_user(self.db, self.settings, self.user_id)
        for skill in hermes.read_skills(self.home):
            if imports.recorded(self.db, self.user_id, KIND_SKILL, skill.name) is not None:
                tally.skipped += 1
            else:
                self.skill(store, skill, tally)
        self.report("3/3", f"skills: {tally.imported} imported, {tally.skipped} skipped", tally)
        return tally

    def skill(self, store: SkillStore, skill: hermes.SourceSkill, tally: Tally) -> None:
        texts, left_out = hermes.skill_files(skill)
        files = {SKILL_FILE: texts.pop(SKILL_FILE, "")}
        for path, text in texts.items():
            try:
                files[check_support_path(path)] = text
            except HermesError:
                left_out.append(path)  # our skills keep extra files only under references/, templates/, …
        try:
            name = check_name(skill.name)
            parse_skill_md(files[SKILL_FILE], name)
            for path, text in files.items():
                if path != SKILL_FILE:
                    check_support_size(path, text)
                refuse_threats(path, text)
            if skill.agent_created:  # Hermes Agent's agent-created skills stay the agent's; the rest are the user's
                store.create_folder(name, files, SkillOrigin.agent, SkillWriter.review)
            else:
                store.create_folder(name, files, SkillOrigin.user, SkillWriter.user)
        except HermesError as exc:
            tally.skipped += 1
            tally.notes.append(f"{skill.name}: not imported: {exc.message}")
            return
        imports.record(self.db, self.user_id, KIND_SKILL, skill.name, name)
        tally.imported += 1
        if left_out:
            tally.notes.append(f"{skill.name}: imported without {', '.join(left_out)} (not text, or outside "
                               "references/, templates/, scripts/ and assets/)")
