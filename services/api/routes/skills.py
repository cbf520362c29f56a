"""Skills of the calling user: list, read, install, pin, unpin, archive, restore, and staged writes.

Another user's skill is answered like a missing one (404): each user's store only sees its own folder.
"""

from __future__ import annotations

from fastapi import APIRouter

from services.api.deps import CurrentUser, DbDep, SettingsDep
from services.api.schemas import error_responses
from shared.config import Settings
from shared.db import Database
from shared.models.memory import StagedDecisionBody
from shared.models.skills import (
    SkillDetail,
    SkillInstall,
    SkillList,
    SkillStagedDecision,
    SkillStagedList,
    SkillStagedPublic,
    SkillStagedWrite,
    SkillSummary,
)
from shared.models.users import User
from shared.stores import skill_staged
from shared.stores.skills import SkillStore

router = APIRouter(prefix="/v1/skills", tags=["skills"], responses=error_responses(401, 422))


def _store(db: Database, settings: Settings, user: User) -> SkillStore:
    return SkillStore.for_user(db, settings, user.id)


@router.get("", response_model=SkillList)
def list_skills(db: DbDep, settings: SettingsDep, user: CurrentUser) -> SkillList:
    """Bundled skills plus the user's own, archived ones included, by name."""
    return SkillList(data=_store(db, settings, user).summaries(include_archived=True))


@router.post("", status_code=201, response_model=SkillDetail, responses=error_responses(409, 413))
def install_skill(body: SkillInstall, db: DbDep, settings: SettingsDep, user: CurrentUser) -> SkillDetail:
    """Install a skill folder (SKILL.md plus supporting files), checked and threat-scanned before it is written."""
    return _store(db, settings, user).install(body)


def _staged(row: SkillStagedWrite) -> SkillStagedPublic:
    return SkillStagedPublic.model_validate(row, from_attributes=True)


@router.get("/pending", response_model=SkillStagedList)
def list_pending(db: DbDep, user: CurrentUser) -> SkillStagedList:
    """Skill writes waiting for a decision (SKILL_WRITE_APPROVAL), oldest first, each with its diff."""
    return SkillStagedList(data=[_staged(row) for row in skill_staged.list_pending(db, user.id)])


@router.post("/pending/{staged_id}", response_model=SkillStagedDecision,
             responses=error_responses(400, 403, 404, 409))
def decide_pending(staged_id: str, body: StagedDecisionBody, db: DbDep, user: CurrentUser,
                   settings: SettingsDep) -> SkillStagedDecision:
    """Approve (applied now, as its writer, under the rules of now) or deny; 409 once decided or expired."""
    row, result = skill_staged.decide(db, settings, user.id, staged_id, approve=body.decision == "approve")
    return SkillStagedDecision(staged=_staged(row), result=result)


@router.get("/{name}", response_model=SkillDetail, responses=error_responses(404))
def read_skill(name: str, db: DbDep, settings: SettingsDep, user: CurrentUser) -> SkillDetail:
    """One skill: SKILL.md, its supporting files, provenance and usage."""
    return _store(db, settings, user).detail(name)


@router.post("/{name}/pin", response_model=SkillSummary, responses=error_responses(404))
def pin_skill(name: str, db: DbDep, settings: SettingsDep, user: CurrentUser) -> SkillSummary:
    """Pin a skill: the curator leaves it alone and the agent cannot delete it."""
    return _store(db, settings, user).set_pinned(name, True)


@router.post("/{name}/unpin", response_model=SkillSummary, responses=error_responses(404))
def unpin_skill(name: str, db: DbDep, settings: SettingsDep, user: CurrentUser) -> SkillSummary:
    return _store(db, settings, user).set_pinned(name, False)


@router.post("/{name}/archive", response_model=SkillSummary, responses=error_responses(404, 409))
def archive_skill(name: str, db: DbDep, settings: SettingsDep, user: CurrentUser) -> SkillSummary:
    """Move a skill to the archive (a bundled one is hidden for this user only); nothing is deleted."""
    return _store(db, settings, user).archive(name)


@router.post("/{name}/restore", response_model=SkillSummary, responses=error_responses(404, 409))
def restore_skill(name: str, db: DbDep, settings: SettingsDep, user: CurrentUser) -> SkillSummary:
    """Bring an archived skill back; it is in the index of the next session."""
    return _store(db, settings, user).restore(name)
