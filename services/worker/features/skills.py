"""The skill index in the frozen system prompt: one line per active skill the user can see.

Built when a session's prompt is first built and frozen with it, so a skill created, archived or
marked stale mid-session shows up (or leaves) at the next session, never in this one.
"""

from __future__ import annotations

from shared.db import get_database
from shared.stores.skills import SkillStore
from services.worker.agent.prompt import PromptContext

INDEX_HEADER = (
    "## Skills\n"
    "Skills are tested procedures for recurring tasks. Before you answer, scan this list: when a task matches a "
    "skill, even partly, load it with skill_view(name) and follow it (its supporting files load with "
    "skill_view(name, file_path))."
)


def skills_index(ctx: PromptContext) -> str | None:
    """The index block, or None when the agent has no skill_view tool or no skill is active."""
    if "skill_view" not in ctx.tools:
        return None
    db = ctx.db or get_database(ctx.settings.sqlalchemy_url)
    entries = SkillStore.for_user(db, ctx.settings, ctx.session.user_id).index()
    if not entries:
        return None
    lines = [f"- {name}: {description}" for name, description in entries]
    return "\n".join([INDEX_HEADER, "<available_skills>", *lines, "</available_skills>"])
