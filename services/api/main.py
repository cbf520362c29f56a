"""The api service: `uvicorn --factory services.api.main:create_app`."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
import threading
import time
from contextlib import asynccontextmanager, suppress

import redis
from fastapi import FastAPI

from services.api.auth_cache import AuthCache, follow_revocations
from services.api.auth_failures import AuthFailures
from services.api.client_address import trust_proxies
from services.api import console
from services.api.body_limit import BodyLimit
from services.api.errors import CatchAll, install_error_handlers
from services.api.fanout import BLOCK_SECONDS, Hub
from services.api.rate_limits import RateLimit
from services.api.recent_turns import RecentTurns
from services.api.text_guard import TextGuard
from services.api.routes import admin, chat_completions, events, health, sessions, turns, users
from services.api.routes import approvals as approval_routes
from services.api.routes import clarifications as clarification_routes
from services.api.routes import keys as key_routes
from services.api.routes import metrics as metrics_routes
from services.api.routes import memory as memory_routes
from services.api.routes import skills as skills_routes
from services.api.routes import search as search_routes
from services.api.routes import reviews as review_routes
from services.api.routes import curator as curator_routes
from services.api.routes import gateway as gateway_routes
from services.api.routes import gateway_admin
from services.api.routes import session_data
from services.api.routes import cron as cron_routes
from services.api.routes import attachments as attachment_routes
from services.api.stream_slots import StreamSlots
from shared.ops import heartbeats
from shared.config import Settings, get_settings
from shared.db import get_database
from shared.ops.logs import setup_logging
from shared.queue.app import enqueue
from shared.messaging.connections import bounded_async_redis, get_redis

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 10.0
ROUTERS = (health.router, users.router, sessions.router, turns.router, events.router,
           chat_completions.router, admin.router, memory_routes.router, skills_routes.router,
           search_routes.router, review_routes.router, curator_routes.router, key_routes.router,
           metrics_routes.router, gateway_routes.router, gateway_admin.router, approval_routes.router,
           session_data.router, clarification_routes.router, cron_routes.router, attachment_routes.router)


async def _announce_forever(settings: Settings) -> None:
    """Tell `hstack status` and /metrics this api is alive, every 10 s, surviving Redis outages."""
    while True:
        try:
            await asyncio.to_thread(heartbeats.announce, get_redis(settings), "api")
        except redis.RedisError as exc:
            log.warning("could not announce the api heartbeat (%s)", type(exc).__name__)
        await asyncio.sleep(HEARTBEAT_SECONDS)


READY_TIMEOUT_SECONDS = 2.0


def _open_redis(app: FastAPI) -> None:
    """Separate, bounded Redis clients: request handling, readiness, and the SSE fan-out.

    However many streams are open, they share SSE_REDIS_CONNECTIONS connections and can never take
    the ones /readyz and ordinary requests need.
    """
    settings, name = app.state.settings, app.state.redis_name
    app.state.redis = bounded_async_redis(
        settings, connections=settings.api_redis_connections, read_timeout=10, name=f"{name}:req")
    app.state.ready_redis = bounded_async_redis(
        settings, connections=2, read_timeout=READY_TIMEOUT_SECONDS, wait_seconds=READY_TIMEOUT_SECONDS,
        name=f"{name}:ready")
    readers = max(1, settings.sse_redis_connections // 2)
    reader_clients = [
        bounded_async_redis(settings, connections=1, read_timeout=BLOCK_SECONDS + 10, name=f"{name}:sse")
        for _ in range(readers)
    ]
    replay = bounded_async_redis(
        settings, connections=settings.sse_redis_connections - readers, read_timeout=10, name=f"{name}:sse")
    app.state.hub = Hub(reader_clients, replay, buffer=settings.sse_subscriber_buffer)
    app.state.auth_failures = AuthFailures(app.state.redis, settings.broker_key_prefix,
                                           settings.auth_failures_per_minute)


def _drain_streams_on_exit_signals(hub: Hub) -> None:
    """uvicorn waits for open responses before it shuts down: on SIGINT/SIGTERM end every event
    stream first (with an `error` event saying to resume), then let uvicorn's own handler run."""
    if threading.current_thread() is not threading.main_thread():
        return
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(sig)
        if not callable(previous):
            continue

        def handler(signum, frame, previous=previous):
            loop.call_soon_threadsafe(hub.drain)
            previous(signum, frame)

        signal.signal(sig, handler)


@asynccontextmanager
async def lifespan(app: FastAPI):
    """Open the Redis clients, the SSE fan-out and the heartbeat for the life of the server."""
    _open_redis(app)
    app.state.hub.start()
    _drain_streams_on_exit_signals(app.state.hub)
    beat = asyncio.create_task(_announce_forever(app.state.settings))
    revocations = asyncio.create_task(follow_revocations(app.state.auth_cache, app.state.settings))
    try:
        yield
    finally:
        revocations.cancel()
        with suppress(asyncio.CancelledError):
            await revocations
        beat.cancel()
        with suppress(asyncio.CancelledError):
            await beat
        await app.state.hub.close()
        await app.state.redis.aclose(close_connection_pool=True)
        await app.state.ready_redis.aclose(close_connection_pool=True)


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
    app.state.recent_turns = RecentTurns()
    app.state.started_at = int(time.time())
    app.state.redis_name = f"hstack-api-{os.getpid()}-{secrets.token_hex(3)}"
    app.state.stream_slots = StreamSlots(settings.sse_max_streams_per_key)
    install_error_handlers(app)
    app.add_middleware(TextGuard)  # inside the body limit, which bounds what it reads
    app.add_middleware(BodyLimit, settings=settings)
    app.add_middleware(RateLimit, settings=settings)
    app.add_middleware(CatchAll)
    for router in ROUTERS:
        app.include_router(router)
    console.install(app)  # the web console at / (its security headers wrap every console response)
    trust_proxies(app, settings)  # outermost: every layer below sees the forwarded client
    return app
