"""The skill tools: skills_list, skill_view and skill_manage (parameter names as in Hermes Agent).

Writes go through shared.stores.skill_writes as the writer bound to `WRITER`: the foreground agent by
default; a background review binds "review" around its tool calls with `writing_as`, which limits it
to skills the agent created.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

from shared.db import get_database
from shared.models.skills import SkillWriter
from shared.files.skill_format import SKILL_FILE
from shared.stores import skill_staged
from shared.stores.skill_writes import ACTIONS, SkillEditor
from shared.stores.skills import SkillStore
from services.worker.tools.registry import Tool, ToolContext

MAX_VIEW_CHARS = 100_000

WRITER: ContextVar[SkillWriter] = ContextVar("skill_writer", default=SkillWriter.agent)
VIEWED: ContextVar[frozenset[tuple[str, str]] | None] = ContextVar("skills_viewed", default=None)


@contextmanager
def writing_as(writer: SkillWriter | str, viewed: frozenset[tuple[str, str]] | None = None) -> Iterator[None]:
    """Run the enclosed tool calls' skill writes as `writer` (the review binds "review").

    `viewed` holds the (skill, file) pairs already loaded with skill_view: with it, a write to an
    existing file not among them is refused (Hermes Agent's read-before-write guard for reviews).
    """
    tokens = WRITER.set(SkillWriter(writer)), VIEWED.set(viewed)
    try:
        yield
    finally:
        WRITER.reset(tokens[0])
        VIEWED.reset(tokens[1])


def _store(ctx: ToolContext) -> SkillStore:
    return SkillStore.for_user(get_database(ctx.settings.sqlalchemy_url), ctx.settings, ctx.user_id)


def skills_list(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """The skills the agent can load: name, description, origin and state (archived ones are left out)."""
    skills = [{"name": s.name, "description": s.description, "origin": s.origin.value, "state": s.state.value}
              for s in _store(ctx).summaries(include_archived=False)]
    return {"skills": skills, "count": len(skills),
            "hint": "Load a skill with skill_view(name) before following it."}


def _capped(text: str) -> str:
    if len(text) <= MAX_VIEW_CHARS:
        return text
    return text[:MAX_VIEW_CHARS] + f"\n[Cut at {MAX_VIEW_CHARS:,} characters of {len(text):,}.]"


def skill_view(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """SKILL.md with the list of supporting files, or one supporting file; counts a view and a use."""
    store = _store(ctx)
    name, file_path = args["name"], args.get("file_path")
    skill = store.usable(name)
    if file_path in (None, "", SKILL_FILE):
        detail = store.detail(name)
        result = {"name": name, "description": detail.description, "origin": detail.origin.value,
                  "state": detail.state.value, "content": detail.content, "files": detail.files}
    else:
        result = {"name": name, "file_path": file_path, "content": _capped(store.read_file(name, file_path))}
    store.mark_used(skill)
    return result


def skill_manage(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Create, edit, patch, delete (archive) a skill, or write or remove one of its supporting files.

    Under SKILL_WRITE_APPROVAL the write is checked now and staged with its diff for a person to decide.
    """
    editor = SkillEditor(_store(ctx), WRITER.get(), VIEWED.get())
    if ctx.settings.skill_write_approval:
        return skill_staged.stage(editor, ctx.settings, args["action"], args, session_id=ctx.session_id)
    return editor.apply(args["action"], args)


_NAME = {"type": "string", "description": "The skill's name (its folder): lowercase letters, digits, '.', '_', '-'."}
# Where supporting files may live is said once, by the error a write elsewhere gets (skill_format.py).
_FILE_PATH = {"type": "string", "description": "A supporting file, e.g. 'references/api.md'."}
VIEW_GUIDANCE = ("Skills are procedures saved from earlier work; when a task matches one in the skills index, load "
                 "it with skill_view before you start and follow it.")
MANAGE_GUIDANCE = (
    "After a hard task (five or more tool calls), an error you worked around, or a procedure the user corrected, "
    "save it with skill_manage: steps first, then pitfalls as rules with a short reason. Patch a loaded skill at "
    "once when it proved wrong or stale; edit only for a major rewrite.")

SKILLS_LIST = Tool(
    name="skills_list",
    description="List the skills you can load: name, description, origin (bundled, user, agent) and state.",
    parameters={"type": "object", "properties": {}, "required": []},
    handler=skills_list,
    guidance=(VIEW_GUIDANCE,),
)
SKILL_VIEW = Tool(
    name="skill_view",
    description="Load a skill: its SKILL.md and the list of its supporting files, or one supporting file with "
                "file_path.",
    parameters={"type": "object", "properties": {
        "name": _NAME,
        "file_path": {**_FILE_PATH, "description": _FILE_PATH["description"] + " Omit it for SKILL.md."},
    }, "required": ["name"]},
    handler=skill_view,
    guidance=(VIEW_GUIDANCE,),
)
# The description says what to keep as a skill and what not to: the main agent's rules and the background
# review's, which reads them here (its first request replays the parent's tools byte for byte, so these words come
# from the prompt cache; review/prompt.py).
SKILL_MANAGE = Tool(
    name="skill_manage",
    description=(
        "Save and improve skills (procedures you can load later). Actions: create (content: the whole SKILL.md, "
        "front matter with name and description, then the instructions), edit (rewrite SKILL.md), patch "
        "(old_string to new_string in SKILL.md or file_path; whitespace may differ; one match unless replace_all), "
        "delete (archived; pinned skills stay), write_file, remove_file. Ask the user before create or delete. "
        "Bundled skills are read-only. Prefer, in order: (1) patch a skill loaded or viewed in this conversation; "
        "(2) patch an umbrella skill for this class of task; (3) add a support file (references/, templates/, "
        "scripts/) with a one-line pointer in SKILL.md; (4) only then create one, never a near-duplicate. A skill "
        "is a class-level procedure named for a kind of task, never a ticket, an error or a one-off; corrections "
        "about a kind of task belong in its skill. skill_view the exact file before you patch it. Never capture "
        "transient errors, missing binaries, unset credentials or claims that a tool does not work; capture the "
        "fix of a solved setup problem."),
    parameters={"type": "object", "properties": {
        "action": {"type": "string", "enum": list(ACTIONS), "description": "What to do."},
        "name": _NAME,
        "content": {"type": "string", "description": "The complete SKILL.md (create, edit)."},
        "old_string": {"type": "string", "description": "Text to find, copied from skill_view (patch)."},
        "new_string": {"type": "string", "description": "Replacement text; may be empty (patch)."},
        "replace_all": {"type": "boolean", "description": "Replace every match instead of exactly one (patch).",
                        "default": False},
        "file_path": _FILE_PATH,
        "file_content": {"type": "string", "description": "The complete file (write_file)."},
    }, "required": ["action", "name"]},
    handler=skill_manage,
    guidance=(MANAGE_GUIDANCE,),
)
