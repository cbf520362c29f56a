"""The api service: `uvicorn --factory services.api.main:create_app`."""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import asynccontextmanager, suppress

import redis
import redis.asyncio as aioredis
from fastapi import FastAPI

from services.api.auth_cache import AuthCache
from services.api.body_limit import BodyLimit
from services.api.errors import CatchAll, install_error_handlers
from services.api.text_guard import TextGuard
from services.api.routes import admin, chat_completions, events, health, sessions, turns, users
from services.api.routes import memory as memory_routes
from services.api.routes import skills as skills_routes
from services.api.routes import search as search_routes
from services.api.routes import reviews as review_routes
from services.api.routes import curator as curator_routes
from shared import heartbeats
from shared.config import Settings, get_settings
from shared.db import get_database
from shared.logs import setup_logging
from shared.queue.app import enqueue
from shared.redis import get_redis, redis_url

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 10.0
ROUTERS = (health.router, users.router, sessions.router, turns.router, events.router,
           chat_completions.router, admin.router, memory_routes.router, skills_routes.router,
           search_routes.router, review_routes.router, curator_routes.router)


async def _announce_forever(settings: Settings) -> None:
    """Tell `hstack status` and /metrics this api is alive, every 10 s, surviving Redis outages."""
    while True:
        try:
            await asyncio.to_thread(heartbeats.announce, get_redis(settings), "api")
        except redis.RedisError as exc:
            log.warning("could not announce the api heartbeat (%s)", type(exc).__name__)
        await asyncio.sleep(HEARTBEAT_SECONDS)


def _async_redis(settings: Settings) -> aioredis.Redis:
    """The asyncio client for streams and readiness; its read timeout outlasts one XREAD BLOCK."""
    return aioredis.Redis.from_url(
        redis_url(settings),
        decode_responses=True,
        socket_connect_timeout=5,
        socket_timeout=settings.sse_keepalive_seconds + 10,
        health_check_interval=30,
    )


@asynccontextmanager
async def lifespan(app: FastAPI):
    """Open the asyncio Redis client and the heartbeat for the life of the server."""
    app.state.redis = _async_redis(app.state.settings)
    beat = asyncio.create_task(_announce_forever(app.state.settings))
    try:
        yield
    finally:
        beat.cancel()
        with suppress(asyncio.CancelledError):
            await beat
        await app.state.redis.aclose()


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the api for these settings (the process's settings by default)."""
    settings = settings or get_settings()
    settings.check_secrets()
    setup_logging(settings.log_level, settings.log_format, settings.secret_values())
    app = FastAPI(
        title="Hermes Stack API",
        version="1",
        summary="A self-hosted, self-improving agent: native turns API and an OpenAI-compatible endpoint.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.db = get_database(settings.sqlalchemy_url)
    app.state.enqueue = enqueue
    app.state.auth_cache = AuthCache()
    app.state.started_at = int(time.time())
    install_error_handlers(app)
    app.add_middleware(TextGuard)  # inside the body limit, which bounds what it reads
    app.add_middleware(BodyLimit, max_bytes=settings.max_input_bytes)
    app.add_middleware(CatchAll)
    for router in ROUTERS:
        app.include_router(router)
    return app
