"""Keys that open nothing, charged to the client address: rotating made-up keys buys no fresh bucket.

Every failed key lookup takes one request from the address's bucket (AUTH_FAILURES_PER_MINUTE); the failure
that empties it is already answered 429. From then on a key the auth cache does not hold is refused 429
before any database lookup, until the bucket refills. Keys from other addresses are untouched. Like the
request limiter it lets requests through when Redis is unreachable: a limiter must never take the api down.
"""

from __future__ import annotations

import asyncio
import logging

import redis.asyncio as aioredis

from shared.errors import RateLimited
from shared.http.ratelimit import RateLimiter

log = logging.getLogger(__name__)

REFUSED = "Too many invalid API keys from this address; retry in {wait} s."


class AuthFailures:
    """The per-address bucket of failed authentications."""

    def __init__(self, client: aioredis.Redis, prefix: str, per_minute: int) -> None:
        self._limiter = RateLimiter(client, prefix)
        self.per_minute = per_minute

    async def refuse_if_limited(self, address: str) -> None:
        """429 when this address has used up its failures (checked before a lookup, so the flood costs none)."""
        self._refuse(await self._ask(self._limiter.waiting(self._bucket(address), self.per_minute)))

    async def charge(self, address: str) -> None:
        """Count one failed lookup; 429 when it was one too many."""
        self._refuse(await self._ask(self._limiter.hit((self._bucket(address), self.per_minute))))

    @staticmethod
    def _bucket(address: str) -> str:
        return f"authfail:{address}"

    @staticmethod
    async def _ask(question) -> int:
        try:
            return await question
        except (aioredis.RedisError, OSError, asyncio.TimeoutError) as exc:
            log.warning("failed authentications are not limited: Redis is unreachable (%s)", type(exc).__name__)
            return 0

    @staticmethod
    def _refuse(wait: int) -> None:
        if wait:
            raise RateLimited(REFUSED.format(wait=wait), retry_after=wait)
