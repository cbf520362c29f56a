"""The operator's view of the stack (`hstack status`); admin key only."""

from __future__ import annotations

from fastapi import APIRouter

from services.api.deps import AdminKey, DbDep, RedisDep, SettingsDep
from services.api.schemas import AdminStatus, error_responses
from services.api.stack_status import admin_status
from shared.models.users import ApiKeyPublic
from shared.stores import users

router = APIRouter(prefix="/v1/admin", tags=["admin"], responses=error_responses(401, 403))


@router.get("/status", response_model=AdminStatus)
def stack_status(db: DbDep, r: RedisDep, settings: SettingsDep, _admin: AdminKey) -> AdminStatus:
    """Live services, queue depths, turns by status and the latest turns."""
    return admin_status(db, r, settings)


@router.get("/keys/{key_id}", response_model=ApiKeyPublic, responses=error_responses(404))
def find_key(key_id: str, db: DbDep, _admin: AdminKey) -> ApiKeyPublic:
    """Any user's key by its id, with its owner (what `hstack keys revoke KEY_ID` needs); never the key itself."""
    return ApiKeyPublic.model_validate(users.get_key(db, key_id), from_attributes=True)
