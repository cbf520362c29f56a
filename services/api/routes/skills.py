"""Skills of the calling user: list, read, install, pin, unpin, archive, restore.

Another user's skill is answered like a missing one (404): each user's store only sees its own folder.
"""

from __future__ import annotations

from fastapi import APIRouter

from services.api.deps import CurrentUser, DbDep, SettingsDep
from services.api.schemas import error_responses
from shared.config import Settings
from shared.db import Database
from shared.models.skills import SkillDetail, SkillInstall, SkillList, SkillSummary
from shared.models.users import User
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
