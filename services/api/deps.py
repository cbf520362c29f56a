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
from services.api.auth_failures import AuthFailures
from services.api.client_address import client_address
from services.api.recent_turns import RecentTurns
from shared.config import Settings
from shared.db import Database
from shared.errors import Forbidden, NotFound, Unauthorized
from shared.http.gateway_auth import ACT_AS_HEADER
from shared.models.users import User
from shared.messaging.connections import get_redis
from shared.stores import pairing, users, webhook_routes

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


async def get_recent_turns(request: Request) -> RecentTurns:
    return request.app.state.recent_turns


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
DbDep = Annotated[Database, Depends(get_db)]
RedisDep = Annotated[redis.Redis, Depends(get_sync_redis)]
AsyncRedisDep = Annotated[aioredis.Redis, Depends(get_async_redis)]
EnqueueDep = Annotated[Enqueue, Depends(get_enqueue)]
AuthCacheDep = Annotated[AuthCache, Depends(get_auth_cache)]
RecentTurnsDep = Annotated[RecentTurns, Depends(get_recent_turns)]


async def current_user(request: Request, settings: SettingsDep, db: DbDep, credentials: Credentials) -> User:
    """The user owning the bearer key; 401 unauthorized otherwise (a recent lookup is reused).

    The gateway's key (GATEWAY_API_KEY) is no user's: it acts for the user named by X-Act-As-User, and only
    when that user is bound through pairing or owns a webhook route.
    """
    if credentials is None or not credentials.credentials:
        raise Unauthorized("A valid API key is required: `Authorization: Bearer <key>`.")
    if matches_secret(credentials.credentials, settings.gateway_api_key):
        if not gateway_may(request.method, request.url.path):
            raise Forbidden("The gateway key may not use this route.")
        return await run_in_threadpool(_acting_for, db, request.headers.get(ACT_AS_HEADER))
    user = await user_for_key(request, credentials.credentials)
    if user is None:
        raise Unauthorized("The API key is not valid.")
    return user


async def user_for_key(request: Request, key: str) -> User | None:
    """The user owning an unrevoked key, or None (the API and the console)."""
    return await user_for_digest(request, users.hash_key(key))


async def user_for_digest(request: Request, digest: str) -> User | None:
    """The user owning the unrevoked key of this digest, or None; a recent lookup is reused.

    A key that opens nothing is charged to the client address, which once over its limit gets 429 for any
    key not already cached here, before the database is asked.
    """
    state = request.app.state
    cache: AuthCache = state.auth_cache
    user = cache.get(digest)
    if user is not None:
        return user
    failures: AuthFailures = state.auth_failures
    address = client_address(request.scope)
    await failures.refuse_if_limited(address)
    generation = cache.generation
    user = await run_in_threadpool(users.authenticate_digest, state.db, digest)
    if user is None:
        await failures.charge(address)
    else:
        cache.put(digest, user, generation)
    return user


# What the gateway does for a chat: turns and their events, approvals and answers, reading memory and skills,
# scheduled jobs.
GATEWAY_ROUTES = (("/v1/sessions", None), ("/v1/turns/", None), ("/v1/approvals", None), ("/v1/clarifications", None),
                  ("/v1/memory", "GET"), ("/v1/skills", "GET"), ("/v1/cron/jobs", None),
                  ("/v1/attachments/", "GET"))


def gateway_may(method: str, path: str) -> bool:
    return any(path.startswith(prefix) and (only is None or method == only) for prefix, only in GATEWAY_ROUTES)


def _acting_for(db: Database, user_id: str | None) -> User:
    """The bound user the gateway acts for; 403 for anyone else (no hint whether they exist)."""
    if user_id:
        try:
            user = users.get_user(db, user_id)
        except NotFound:
            user = None
        if user is not None and (pairing.is_bound_user(db, user.id) or webhook_routes.owns_route(db, user.id)):
            return user
    raise Forbidden(f"The gateway key acts only for a user bound by pairing or a webhook route ({ACT_AS_HEADER}).")


def matches_secret(presented: str, secret: SecretStr | None) -> bool:
    """The presented key equals this configured secret (constant-time; an unset secret matches nothing)."""
    expected = secret.get_secret_value() if secret else ""
    return bool(expected) and secrets.compare_digest(presented.encode(), expected.encode())


async def _refuse(request: Request, presented: str, needed: str, settings: Settings | None = None) -> None:
    """A user's key (or the gateway's) is 403 forbidden, anything else 401."""
    if (settings is not None and matches_secret(presented, settings.gateway_api_key)) or \
            await user_for_key(request, presented) is not None:
        raise Forbidden(f"This route needs {needed}.")
    raise Unauthorized("The API key is not valid.")


async def admin_key(request: Request, settings: SettingsDep, credentials: Credentials) -> None:
    """Pass only the admin key; a user's key is 403 forbidden, anything else 401."""
    if credentials is None or not credentials.credentials:
        raise Unauthorized("The admin API key is required: `Authorization: Bearer <key>`.")
    if not matches_secret(credentials.credentials, settings.admin_api_key):
        await _refuse(request, credentials.credentials, "the admin API key", settings)


def stream_owner(settings: Settings, presented: str, user_id: str) -> str:
    """Whose stream slots an event stream takes: its key's, or for the gateway's key the acted-for user's."""
    digest = users.hash_key(presented)
    return f"{digest}:{user_id}" if matches_secret(presented, settings.gateway_api_key) else digest


async def gateway_key(request: Request, settings: SettingsDep, credentials: Credentials) -> None:
    """Pass only the gateway's key (GATEWAY_API_KEY); a user's key is 403 forbidden, anything else 401."""
    if credentials is None or not credentials.credentials:
        raise Unauthorized("The gateway API key is required: `Authorization: Bearer <key>`.")
    if not matches_secret(credentials.credentials, settings.gateway_api_key):
        await _refuse(request, credentials.credentials, "the gateway API key")


async def metrics_key(request: Request, settings: SettingsDep, credentials: Credentials) -> None:
    """Pass the admin key or METRICS_TOKEN (what Prometheus scrapes with); a user's key is 403, anything else 401."""
    if credentials is None or not credentials.credentials:
        raise Unauthorized("The admin API key or METRICS_TOKEN is required: `Authorization: Bearer <token>`.")
    presented = credentials.credentials
    if not (matches_secret(presented, settings.admin_api_key) or matches_secret(presented, settings.metrics_token)):
        await _refuse(request, presented, "the admin API key or METRICS_TOKEN", settings)


CurrentUser = Annotated[User, Depends(current_user)]
AdminKey = Annotated[None, Depends(admin_key)]
MetricsKey = Annotated[None, Depends(metrics_key)]
GatewayKey = Annotated[None, Depends(gateway_key)]
