"""Request dependencies, as Annotated aliases the routes declare.

The getters that do no I/O are `async def` so FastAPI calls them inline instead of in the threadpool.
"""

from __future__ import annotations

import secrets
from typing import Annotated, Callable

import redis
import redis.asyncio as aioredis
from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, SecretStr

from services.api.auth_cache import AuthCache
from shared.config import Settings
from shared.db import Database
from shared.errors import Forbidden, Unauthorized
from shared.models.users import User
from shared.redis import get_redis
from shared.stores import users

Enqueue = Callable[[str, BaseModel], None]

bearer = HTTPBearer(auto_error=False, description="An API key: `Authorization: Bearer <key>`.")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


async def get_settings_dep(request: Request) -> Settings:
    return request.app.state.settings


async def get_db(request: Request) -> Database:
    return request.app.state.db


async def get_sync_redis(request: Request) -> redis.Redis:
    """The process's synchronous client, for sync routes (metrics, heartbeats, publishing)."""
    return get_redis(request.app.state.settings)


async def get_async_redis(request: Request) -> aioredis.Redis:
    """The app's asyncio client, opened by the lifespan, for streams and readiness."""
    return request.app.state.redis


async def get_auth_cache(request: Request) -> AuthCache:
    return request.app.state.auth_cache


async def get_enqueue(request: Request) -> Enqueue:
    """Read at call time so tests may replace `app.state.enqueue`."""
    return request.app.state.enqueue


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
DbDep = Annotated[Database, Depends(get_db)]
RedisDep = Annotated[redis.Redis, Depends(get_sync_redis)]
AsyncRedisDep = Annotated[aioredis.Redis, Depends(get_async_redis)]
EnqueueDep = Annotated[Enqueue, Depends(get_enqueue)]
AuthCacheDep = Annotated[AuthCache, Depends(get_auth_cache)]


async def current_user(cache: AuthCacheDep, db: DbDep, credentials: Credentials) -> User:
    """The user owning the bearer key; 401 unauthorized otherwise (a recent lookup is reused)."""
    if credentials is None or not credentials.credentials:
        raise Unauthorized("A valid API key is required: `Authorization: Bearer <key>`.")
    digest = users.hash_key(credentials.credentials)
    user = cache.get(digest)
    if user is None:
        generation = cache.generation
        user = await run_in_threadpool(users.authenticate, db, credentials.credentials)
        if user is None:
            raise Unauthorized("The API key is not valid.")
        cache.put(digest, user, generation)
    return user


def _matches(presented: str, secret: SecretStr | None) -> bool:
    expected = secret.get_secret_value() if secret else ""
    return bool(expected) and secrets.compare_digest(presented.encode(), expected.encode())


def _refuse(db: Database, presented: str, needed: str) -> None:
    """A user's key is 403 forbidden, anything else 401."""
    if users.authenticate(db, presented) is not None:
        raise Forbidden(f"This route needs {needed}.")
    raise Unauthorized("The API key is not valid.")


def admin_key(settings: SettingsDep, db: DbDep, credentials: Credentials) -> None:
    """Pass only the admin key; a user's key is 403 forbidden, anything else 401."""
    if credentials is None or not credentials.credentials:
        raise Unauthorized("The admin API key is required: `Authorization: Bearer <key>`.")
    if not _matches(credentials.credentials, settings.admin_api_key):
        _refuse(db, credentials.credentials, "the admin API key")


def metrics_key(settings: SettingsDep, db: DbDep, credentials: Credentials) -> None:
    """Pass the admin key or METRICS_TOKEN (what Prometheus scrapes with); a user's key is 403, anything else 401."""
    if credentials is None or not credentials.credentials:
        raise Unauthorized("The admin API key or METRICS_TOKEN is required: `Authorization: Bearer <token>`.")
    presented = credentials.credentials
    if not (_matches(presented, settings.admin_api_key) or _matches(presented, settings.metrics_token)):
        _refuse(db, presented, "the admin API key or METRICS_TOKEN")


CurrentUser = Annotated[User, Depends(current_user)]
AdminKey = Annotated[None, Depends(admin_key)]
MetricsKey = Annotated[None, Depends(metrics_key)]
