"""Redis connections (broker, event streams, metrics), one pool per URL per process."""

from __future__ import annotations

from functools import lru_cache

import redis
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialBackoff

from shared.config import Settings
from shared.errors import Unavailable


def redis_url(settings: Settings) -> str:
    if not settings.redis_url:
        raise Unavailable("REDIS_URL is not set; `hstack run` starts an embedded Redis and sets it.")
    return settings.redis_url


@lru_cache(maxsize=8)
def _sync_client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, decode_responses=True, socket_timeout=30, socket_connect_timeout=5,
                                health_check_interval=30, retry_on_timeout=True)


def get_redis(settings: Settings) -> redis.Redis:
    """The process's synchronous client."""
    return _sync_client(redis_url(settings))


def async_reconnect() -> dict:
    """Options that make an asyncio client reconnect when Redis restarts, instead of failing the first command on
    each dead pooled connection (the sync client already does)."""
    return {"retry": AsyncRetry(ExponentialBackoff(cap=1.0, base=0.05), 3),
            "retry_on_error": [redis.ConnectionError, redis.TimeoutError]}


def get_async_redis(settings: Settings, *, read_timeout: float = 30) -> aioredis.Redis:
    """A new asyncio client (asyncio clients belong to one event loop).

    `read_timeout` must exceed the longest blocking read (XREAD BLOCK) made with it.
    """
    return aioredis.Redis.from_url(redis_url(settings), decode_responses=True, socket_connect_timeout=5,
                                   socket_timeout=read_timeout, health_check_interval=30, **async_reconnect())


def bounded_async_redis(
    settings: Settings, *, connections: int, read_timeout: float, name: str, wait_seconds: float = 5.0
) -> aioredis.Redis:
    """A new asyncio client that never opens more than `connections` connections.

    A caller finding every connection busy waits up to `wait_seconds` for one (then ConnectionError),
    instead of opening one more; `name` is set with CLIENT SETNAME so CLIENT LIST shows who holds what.
    """
    pool = aioredis.BlockingConnectionPool.from_url(
        redis_url(settings),
        max_connections=connections,
        timeout=wait_seconds,
        decode_responses=True,
        socket_connect_timeout=min(5.0, read_timeout),
        socket_timeout=read_timeout,
        health_check_interval=30,
        client_name=name,
        **async_reconnect(),
    )
    return aioredis.Redis(connection_pool=pool)
