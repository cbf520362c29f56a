"""Request rate limits shared by every api process: one GCRA bucket per key in Redis.

GCRA (the generic cell rate algorithm) keeps one timestamp per bucket, the "theoretical arrival
time"; a script updates it atomically with Redis's own clock, so api replicas agree without
talking to each other and a burst of `limit` requests is allowed after a quiet minute.
"""

from __future__ import annotations

import math

import redis.asyncio as aioredis

PERIOD_MS = 60_000

# KEYS: the buckets, in order; ARGV[1] period in ms, ARGV[1 + i] requests per period of KEYS[i]. Takes one request
# from each bucket in turn and stops at the first that has none left, returning its ms to wait (0 = allowed by all).
GCRA = """
local period = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i, key in ipairs(KEYS) do
  local interval = period / tonumber(ARGV[i + 1])
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  local new_tat = tat + interval
  local wait = new_tat - period - now
  if wait > 0 then return math.ceil(wait) end
  redis.call('SET', key, string.format('%.3f', new_tat), 'PX', math.ceil(new_tat - now) + 1)
end
return 0
"""

# KEYS[1]: one bucket; ARGV[1] period in ms, ARGV[2] its requests per period. The ms the next request would wait,
# taking nothing (0 = it would be allowed).
PEEK = """
local period = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local wait = tat + period / tonumber(ARGV[2]) - period - now
if wait > 0 then return math.ceil(wait) end
return 0
"""


def _seconds(wait_ms: int) -> int:
    return 0 if wait_ms <= 0 else max(1, math.ceil(wait_ms / 1000))


class RateLimiter:
    """Counts hits per bucket; `hit` answers how many whole seconds to wait (0 when allowed)."""

    def __init__(self, client: aioredis.Redis, prefix: str = "") -> None:
        self.client = client
        self._script = client.register_script(GCRA)
        self._peek = client.register_script(PEEK)
        self._prefix = prefix

    def _key(self, bucket: str) -> str:
        return f"{self._prefix}ratelimit:{bucket}"

    async def hit(self, *buckets: tuple[str, int]) -> int:
        """Take one request from each (bucket, per_minute) in order, in one round trip, stopping at the first
        that refuses (the earlier ones stay taken, as separate hits would leave them); a limit of 0 or less
        never limits. Redis errors propagate."""
        limited = [(bucket, per_minute) for bucket, per_minute in buckets if per_minute > 0]
        if not limited:
            return 0
        keys = [self._key(bucket) for bucket, _ in limited]
        args = [PERIOD_MS, *(per_minute for _, per_minute in limited)]
        return _seconds(int(await self._script(keys=keys, args=args)))

    async def waiting(self, bucket: str, per_minute: int) -> int:
        """Whole seconds the next hit of this bucket would wait (0: it would pass), taking nothing."""
        if per_minute <= 0:
            return 0
        return _seconds(int(await self._peek(keys=[self._key(bucket)], args=[PERIOD_MS, per_minute])))
