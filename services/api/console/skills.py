"""Console pages for a user's skills: the list, one skill, pin / unpin / archive / restore, staged writes.

Every action calls the same SkillStore / skill_staged function as the /v1/skills routes; another user's
skill or staged write answers 404, as there.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request

from services.api.console.actions import attempt
from services.api.console.deps import ConsoleForm, ConsoleUser
from services.api.console.render import render
from shared.errors import HermesError, NotFound
from shared.models.users import User
from shared.stores import skill_staged
from shared.files.skill_format import split_front_matter
from shared.stores.skills import SkillStore

router = APIRouter(include_in_schema=False)

ACTIONS = {"pin": ("Pinned", lambda store, name: store.set_pinned(name, True)),
           "unpin": ("Unpinned", lambda store, name: store.set_pinned(name, False)),
           "archive": ("Archived", lambda store, name: store.archive(name)),
           "restore": ("Restored", lambda store, name: store.restore(name))}


def _store(request: Request, user: User) -> SkillStore:
    state = request.app.state
    return SkillStore.for_user(state.db, state.settings, user.id)


def body_of(content: str) -> str:
    """SKILL.md without its front matter (shown as fields instead); the whole text when it has none."""
    try:
        return split_front_matter(content)[1]
    except HermesError:
        return content


@router.get("/skills")
def skills_page(request: Request, user: ConsoleUser):
    """Every skill with origin, state, pin and use, and the skill writes waiting for a decision."""
    skills = _store(request, user).summaries(include_archived=True)
    pending = skill_staged.list_pending(request.app.state.db, user.id)
    return render(request, "skills.html", active="skills", skills=skills, pending=pending)


@router.post("/skills/pending/{staged_id}")
def decide_pending(request: Request, staged_id: str, user: ConsoleUser, form: ConsoleForm):
    """Approve (applied now, under the rules of now) or deny one staged write, as POST /v1/skills/pending/{id}."""
    approve = form.get("decision") == "approve"
    state = request.app.state
    return attempt(request, "/skills",
                   lambda: skill_staged.decide(state.db, state.settings, user.id, staged_id, approve=approve),
                   "Skill write approved and applied." if approve else "Skill write denied.")


@router.get("/skills/{name}")
def skill_page(request: Request, name: str, user: ConsoleUser):
    """One skill: its fields, SKILL.md rendered as Markdown (raw HTML shown as text), its files."""
    skill = _store(request, user).detail(name)
    return render(request, "skill.html", active="skills", skill=skill, body=body_of(skill.content))


@router.post("/skills/{name}/{action}")
def change_skill(request: Request, name: str, action: str, user: ConsoleUser, form: ConsoleForm):
    """Pin, unpin, archive or restore through the store, as POST /v1/skills/{name}/{action}; anything else 404."""
    if action not in ACTIONS:
        raise NotFound("There is no such page.")
    done, call = ACTIONS[action]
    store = _store(request, user)
    return attempt(request, f"/skills/{quote(name, safe='')}", lambda: call(store, name), f"{done} {name}.")
