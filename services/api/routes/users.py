"""Users and their API keys; admin key only."""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import BaseModel

from services.api import forgetting
from services.api.auth_cache import announce_revoked
from services.api.deps import AdminKey, AuthCacheDep, DbDep, RedisDep, SettingsDep
from services.api.routes.keys import key_list, revoke
from services.api.routes.session_data import providers
from services.api.schemas import UserCreateBody, UserList, error_responses
from shared.models.users import ApiKeyIssued, ApiKeyList, ApiKeyPublic, UserPublic, UserUpdate
from shared.stores import users


class UserForgotten(BaseModel):
    """What `DELETE /v1/users/{id}` removed."""

    id: str
    name: str
    deleted: bool = True
    sessions: int
    kept: str = "Nothing: the user's memory files, skills and workspace went with the user."


router = APIRouter(prefix="/v1/users", tags=["users"], responses=error_responses(401, 403))


@router.post("", status_code=201, response_model=UserPublic, responses=error_responses(409, 422))
def create_user(body: UserCreateBody, db: DbDep, _admin: AdminKey) -> UserPublic:
    """Create a user; 409 user_exists when the name is taken."""
    return UserPublic.model_validate(users.create_user(db, body.name), from_attributes=True)


@router.get("", response_model=UserList)
def list_users(db: DbDep, _admin: AdminKey) -> UserList:
    """Every user, oldest first."""
    return UserList(data=[UserPublic.model_validate(u, from_attributes=True) for u in users.list_users(db)])


@router.patch("/{user_id}", response_model=UserPublic, responses=error_responses(404, 422))
def update_user(user_id: str, body: UserUpdate, db: DbDep, _admin: AdminKey) -> UserPublic:
    """Set a user's (by id or name) time zone, which their scheduled jobs are read in; null: the server's."""
    return UserPublic.model_validate(users.set_timezone(db, user_id, body.timezone), from_attributes=True)


@router.post("/{user_id}/keys", status_code=201, response_model=ApiKeyIssued, responses=error_responses(404))
def issue_key(user_id: str, db: DbDep, _admin: AdminKey) -> ApiKeyIssued:
    """Issue an API key for a user (by id or name); the key is in this answer only."""
    user = users.find_user(db, user_id)
    key, plaintext = users.create_key(db, user.id)
    return ApiKeyIssued(id=key.id, user_id=user.id, key=plaintext, prefix=key.prefix, created_at=key.created_at)


@router.get("/{user_id}/keys", response_model=ApiKeyList, responses=error_responses(404))
def list_keys(user_id: str, db: DbDep, _admin: AdminKey) -> ApiKeyList:
    """A user's keys (by id or name), revoked ones included, oldest first; never the key itself."""
    return key_list(users.list_keys(db, users.find_user(db, user_id).id))


@router.delete("/{user_id}/keys/{key_id}", response_model=ApiKeyPublic, responses=error_responses(404))
def revoke_key(user_id: str, key_id: str, db: DbDep, r: RedisDep, settings: SettingsDep, cache: AuthCacheDep,
               _admin: AdminKey) -> ApiKeyPublic:
    """Revoke a user's key: 401 from the next request in every api process; the row stays for the record."""
    return revoke(db, r, settings, cache, users.find_user(db, user_id).id, key_id)


@router.delete("/{user_id}", response_model=UserForgotten, responses=error_responses(404))
def delete_user(user_id: str, request: Request, db: DbDep, r: RedisDep, settings: SettingsDep, cache: AuthCacheDep,
                _admin: AdminKey) -> UserForgotten:
    """Forget a user (by id or name): every session as DELETE /v1/sessions/{id} does, then every row and file."""
    user = users.find_user(db, user_id)
    forgotten, key_hashes = forgetting.forget_user(db, r, settings, providers(request), user.id)
    for digest in key_hashes:
        announce_revoked(cache, r, settings, digest)
    return UserForgotten(id=user.id, name=user.name, sessions=len(forgotten.session_ids))
