"""Verified webhook requests already received, in Redis: shared by every gateway and api replica and kept across
restarts, so a replayed request is refused however long the gateway has been up or down."""

from __future__ import annotations

import hashlib

import redis.asyncio as aioredis

# KEYS: the marks of one request; ARGV[1]: seconds to keep them. 1 and every mark set when none existed, else 0.
CLAIM = """
for _, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then return 0 end
end
for _, key in ipairs(KEYS) do
  redis.call('SET', key, '1', 'EX', tonumber(ARGV[1]))
end
return 1
"""


def mark_key(prefix: str, route: str, mark: str) -> str:
    return f"{prefix}webhook:seen:{route}:{hashlib.sha256(mark.encode()).hexdigest()}"


async def first_time(client: aioredis.Redis, prefix: str, route: str, marks: list[str], ttl_seconds: int) -> bool:
    """True (and every mark remembered for ttl_seconds) when none of the request's marks was seen before."""
    keys = [mark_key(prefix, route, mark) for mark in marks]
    return bool(int(await client.eval(CLAIM, len(keys), *keys, ttl_seconds)))
