"""A user's own API keys: list them and revoke one (another user's key answers 404)."""

from __future__ import annotations

from fastapi import APIRouter

from services.api.auth_cache import revoke_key
from services.api.deps import AuthCacheDep, CurrentUser, DbDep, RedisDep, SettingsDep
from services.api.schemas import error_responses
from shared.models.users import ApiKeyList, ApiKeyPublic
from shared.stores import users

router = APIRouter(prefix="/v1/keys", tags=["keys"], responses=error_responses(401))


def key_list(rows) -> ApiKeyList:
    return ApiKeyList(data=[ApiKeyPublic.model_validate(k, from_attributes=True) for k in rows])


def revoke(db, r, settings, cache, user_id: str, key_id: str) -> ApiKeyPublic:
    """Revoke in the database, then make every api process forget the key."""
    return ApiKeyPublic.model_validate(revoke_key(db, cache, r, settings, user_id, key_id), from_attributes=True)


@router.get("", response_model=ApiKeyList)
def list_my_keys(user: CurrentUser, db: DbDep) -> ApiKeyList:
    """The caller's keys, revoked ones included, oldest first; never the key itself."""
    return key_list(users.list_keys(db, user.id))


@router.delete("/{key_id}", response_model=ApiKeyPublic, responses=error_responses(404))
def revoke_my_key(key_id: str, user: CurrentUser, db: DbDep, r: RedisDep, settings: SettingsDep,
                  cache: AuthCacheDep) -> ApiKeyPublic:
    """Revoke one of the caller's keys (the one in use too); it answers 401 from the next request on."""
    return revoke(db, r, settings, cache, user.id, key_id)
