"""Rate limits on every route (pure ASGI): per API key, or per client address without one.

Turn creation has its own, stricter bucket on top. The limiter talks to Redis through a small
pool of its own with short timeouts; when Redis is unreachable it lets requests through and
warns, because a limiter must never take the api down.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import re
import time
from http.cookies import CookieError, SimpleCookie

import redis.asyncio as aioredis
from starlette.datastructures import Headers
from starlette.responses import HTMLResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from services.api.client_address import client_address
from services.api.console import session_store
from services.api.console.paths import is_console_path
from services.api.console.session import SESSION_COOKIE
from services.api.errors import error_response
from shared.config import Settings
from shared.http.gateway_auth import ACT_AS_HEADER
from shared.http.ratelimit import RateLimiter
from shared.messaging.connections import redis_url

log = logging.getLogger(__name__)

EXEMPT_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
TURN_PATH = re.compile(r"^/v1/sessions/[^/]+/turns/?$")
CONSOLE_TURN_PATH = re.compile(r"^/chat/(?:new|[^/]+/send)$")
GATEWAY_OWN = "gateway"
POOL_CONNECTIONS = 16
REDIS_TIMEOUT_SECONDS = 0.5
FAIL_OPEN_SECONDS = 5.0
CONSOLE_429 = ('<!doctype html><html lang="en"><meta charset="utf-8"><title>Too many requests</title>'
               '<h1>Too many requests</h1><p role="alert">Too many requests; retry in {wait} s.</p></html>')


def creates_turn(method: str, path: str) -> bool:
    return method == "POST" and (path == "/v1/chat/completions" or TURN_PATH.match(path) is not None
                                 or CONSOLE_TURN_PATH.match(path) is not None)


def identity(scope: Scope, gateway_key: str = "", session_digest: str = "") -> str:
    """Whom a request counts against: the digest of its bearer key (or of the key that opened its console
    session), else its client address.

    The gateway's key acting for a user counts against that user, so one busy chat cannot starve the others;
    its own calls (who is this, which route, the outbox) are GATEWAY_OWN: never limited here, because the
    gateway bounds the outside traffic behind them itself, and outside traffic must never starve them.
    """
    headers = Headers(scope=scope)
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        digest = "key:" + hashlib.sha256(token.strip().encode()).hexdigest()
        acting = headers.get(ACT_AS_HEADER, "")
        if gateway_key and hmac.compare_digest(token.strip().encode(), gateway_key.encode()):
            return f"{digest}:as:{acting[:64]}" if acting else GATEWAY_OWN
        return digest
    if session_digest:
        return f"key:{session_digest}"
    return f"addr:{client_address(scope)}"


def session_id_of(scope: Scope) -> str | None:
    """The console session id a request's Cookie header carries, if any."""
    raw = Headers(scope=scope).get("cookie")
    if not raw:
        return None
    jar = SimpleCookie()
    try:
        jar.load(raw)
    except CookieError:
        return None
    morsel = jar.get(SESSION_COOKIE)
    return morsel.value if morsel else None


class RateLimit:
    """429 rate_limited with Retry-After once a key used up its requests (or its turns) for the minute."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        self._limiters: dict[int, RateLimiter] = {}  # asyncio clients belong to one event loop
        self._open_until = 0.0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path", "") in EXEMPT_PATHS:
            await self.app(scope, receive, send)
            return
        wait = await self._wait(scope)
        if wait:
            path = scope.get("path", "")
            if is_console_path(path):  # a person reading a page, not a client parsing JSON
                response = HTMLResponse(CONSOLE_429.format(wait=int(wait)), 429, headers={"Retry-After": str(wait)})
            else:
                response = error_response(path, 429, "rate_limited", f"Too many requests; retry in {wait} s.",
                                          headers={"Retry-After": str(wait)})
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _wait(self, scope: Scope) -> int:
        """Seconds this request must wait: the general bucket, then (one script) the turn bucket for a new turn."""
        s = self.settings
        if (s.rate_limit_per_minute <= 0 and s.turn_rate_limit_per_minute <= 0) or time.monotonic() < self._open_until:
            return 0
        gateway = s.gateway_api_key.get_secret_value() if s.gateway_api_key else ""
        try:
            who = identity(scope, gateway, await self._session_digest(scope))
            if who == GATEWAY_OWN:
                return 0
            buckets = [(f"all:{who}", s.rate_limit_per_minute)]
            if creates_turn(scope.get("method", ""), scope.get("path", "")):
                buckets.append((f"turns:{who}", s.turn_rate_limit_per_minute))
            return await self._limiter().hit(*buckets)  # one EVALSHA for both buckets of a new turn
        except (aioredis.RedisError, OSError, asyncio.TimeoutError) as exc:
            self._open_until = time.monotonic() + FAIL_OPEN_SECONDS
            log.warning("rate limits are off for %.0f s: Redis is unreachable (%s)", FAIL_OPEN_SECONDS,
                        type(exc).__name__)
            return 0

    async def _session_digest(self, scope: Scope) -> str:
        """The key digest of a live console session named by the cookie (none for a bearer request), so the
        console shares its key's buckets; an unknown id buys no fresh bucket: it counts by address."""
        if Headers(scope=scope).get("authorization"):
            return ""
        session_id = session_id_of(scope)
        if not session_id:
            return ""
        session = await session_store.load(self._limiter().client, self.settings.broker_key_prefix, session_id)
        return session.limit_digest if session else ""

    def _limiter(self) -> RateLimiter:
        loop = id(asyncio.get_running_loop())
        limiter = self._limiters.get(loop)
        if limiter is None:
            pool = aioredis.BlockingConnectionPool.from_url(
                redis_url(self.settings), max_connections=POOL_CONNECTIONS, timeout=REDIS_TIMEOUT_SECONDS,
                socket_timeout=REDIS_TIMEOUT_SECONDS, socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
                decode_responses=True)
            limiter = self._limiters[loop] = RateLimiter(aioredis.Redis(connection_pool=pool),
                                                         self.settings.broker_key_prefix)
        return limiter
