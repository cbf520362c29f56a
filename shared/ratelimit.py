"""Request rate limits shared by every api process: one GCRA bucket per key in Redis.

GCRA (the generic cell rate algorithm) keeps one timestamp per bucket, the "theoretical arrival
time"; a script updates it atomically with Redis's own clock, so api replicas agree without
talking to each other and a burst of `limit` requests is allowed after a quiet minute.
"""

from __future__ import annotations

import math

import redis.asyncio as aioredis

PERIOD_MS = 60_000

# KEYS[1] bucket; ARGV[1] period in ms, ARGV[2] requests per period. Returns ms to wait (0 = allowed).
GCRA = """
local period = tonumber(ARGV[1])
local interval = period / tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local new_tat = tat + interval
local wait = new_tat - period - now
if wait > 0 then return math.ceil(wait) end
redis.call('SET', KEYS[1], string.format('%.3f', new_tat), 'PX', math.ceil(new_tat - now) + 1)
return 0
"""


class RateLimiter:
    """Counts hits per bucket; `hit` answers how many whole seconds to wait (0 when allowed)."""

    def __init__(self, client: aioredis.Redis, prefix: str = "") -> None:
        self._script = client.register_script(GCRA)
        self._prefix = prefix

    async def hit(self, bucket: str, per_minute: int) -> int:
        """Take one request from `bucket`; a limit of 0 or less never limits. Redis errors propagate."""
        if per_minute <= 0:
            return 0
        wait_ms = int(await self._script(keys=[f"{self._prefix}ratelimit:{bucket}"], args=[PERIOD_MS, per_minute]))
        return 0 if wait_ms <= 0 else max(1, math.ceil(wait_ms / 1000))
