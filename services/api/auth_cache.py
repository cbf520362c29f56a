"""A short-lived, in-process memory of which user a key belongs to, so a request costs no key lookup.

Only successful lookups are remembered, keyed by the key's digest (never the key itself), for at most
AUTH_CACHE_SECONDS. A revocation is announced on a Redis channel and every api process drops the digest
at once (`follow_revocations`). While that subscription is down nothing is cached, and the cache is
emptied on every (re)subscribe, so a revocation announced while a process was not listening still
takes effect as soon as it listens again.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import OrderedDict
from contextlib import suppress

import redis

from shared.config import Settings
from shared.db import Database
from shared.errors import Unavailable
from shared.models.users import ApiKey, User
from shared.stores import users
from shared.messaging.connections import get_async_redis

log = logging.getLogger(__name__)

AUTH_CACHE_SECONDS = 5.0
CAPACITY = 4096
LISTEN_SECONDS = 5.0
RESUBSCRIBE_SECONDS = 1.0


class AuthCache:
    """Digest -> user, with a TTL; caches only while armed (subscribed to revocations)."""

    def __init__(self, ttl: float = AUTH_CACHE_SECONDS, capacity: int = CAPACITY) -> None:
        self.ttl = ttl
        self.capacity = capacity
        self._entries: OrderedDict[str, tuple[float, User]] = OrderedDict()
        self._lock = threading.Lock()
        self._armed = False
        self._generation = 0

    @property
    def armed(self) -> bool:
        return self._armed

    @property
    def generation(self) -> int:
        """Read before a database lookup and handed to `put`, so a lookup that raced a revocation is not kept."""
        return self._generation

    def get(self, digest: str) -> User | None:
        with self._lock:
            entry = self._entries.get(digest)
            if entry is None or entry[0] < time.monotonic():
                self._entries.pop(digest, None)
                return None
            return entry[1]

    def put(self, digest: str, user: User, generation: int) -> None:
        with self._lock:
            if not self._armed or generation != self._generation:
                return
            self._entries[digest] = (time.monotonic() + self.ttl, user)
            self._entries.move_to_end(digest)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def drop(self, digest: str) -> None:
        """Forget one key (it was revoked)."""
        with self._lock:
            self._entries.pop(digest, None)
            self._generation += 1

    def arm(self) -> None:
        """Start caching from empty: revocations are heard from now on."""
        self._reset(armed=True)

    def disarm(self) -> None:
        """Stop caching: revocations cannot be heard."""
        self._reset(armed=False)

    def _reset(self, *, armed: bool) -> None:
        with self._lock:
            self._entries.clear()
            self._generation += 1
            self._armed = armed


def revocation_channel(settings: Settings) -> str:
    """The pub/sub channel (channels ignore the database number, so the key prefix keeps stacks apart)."""
    return f"{settings.broker_key_prefix}auth:keys-revoked"


def announce_revoked(cache: AuthCache, r: redis.Redis, settings: Settings, digest: str) -> None:
    """Drop a revoked key here and tell every other api process; the revocation itself is already committed."""
    cache.drop(digest)
    try:
        r.publish(revocation_channel(settings), digest)
    except redis.RedisError as exc:
        # Other processes empty their caches when they resubscribe after this outage.
        log.warning("could not announce a key revocation (%s)", type(exc).__name__)


def revoke_key(db: Database, cache: AuthCache, r: redis.Redis, settings: Settings, user_id: str, key_id: str) -> ApiKey:
    """Revoke one of a user's keys in the database, then make every api process forget it (API and console)."""
    key = users.revoke_key(db, user_id, key_id)
    announce_revoked(cache, r, settings, key.key_hash)
    return key


def _apply(cache: AuthCache, message: dict) -> None:
    if message["type"] == "subscribe":
        cache.arm()
    elif message["type"] == "message":
        cache.drop(message["data"])


async def follow_revocations(cache: AuthCache, settings: Settings) -> None:
    """Listen for revoked key digests for the life of the process, resubscribing after Redis outages.

    Whatever goes wrong with one subscription (an error, a hang, a connection that never confirms the
    subscription) ends it, disarms the cache and starts a fresh one a second later; only cancellation stops
    the loop.
    """
    while True:
        try:
            client = get_async_redis(settings, read_timeout=LISTEN_SECONDS + 10)
        except Unavailable:
            return
        try:
            await _listen(cache, settings, client)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure means "not listening": disarm and resubscribe
            log.warning("key revocations unheard, auth cache off until Redis answers (%s)", type(exc).__name__)
        finally:
            cache.disarm()
            with suppress(Exception):
                await client.aclose()
        await asyncio.sleep(RESUBSCRIBE_SECONDS)


async def _listen(cache: AuthCache, settings: Settings, client) -> None:
    """One subscription: arm on its confirmation, drop digests as they come; raise if it is not confirmed."""
    async with client.pubsub() as pubsub:
        await asyncio.wait_for(pubsub.subscribe(revocation_channel(settings)), LISTEN_SECONDS)
        while True:
            message = await asyncio.wait_for(pubsub.get_message(timeout=LISTEN_SECONDS), LISTEN_SECONDS + 5)
            if message is not None:
                _apply(cache, message)
            elif not cache.armed:
                raise TimeoutError("the subscription was never confirmed")
