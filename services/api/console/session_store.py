"""Console sessions kept in Redis; the browser's cookie holds only a random id.

A record says whose key opened the session (the digest of the user's key and/or of the admin key, never the
key), carries the session's CSRF token, and expires after CONSOLE_SESSION_HOURS. Redis keys it by the
sha256 of the id, so a copy of Redis holds no cookie that works. Signing out deletes the record, so a copied
cookie stops working with it; a revoked key fails the per-request check and its session is deleted then.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import asdict, dataclass

import redis.asyncio as aioredis

ID_BYTES = 32


@dataclass(frozen=True)
class ConsoleSession:
    """One signed-in browser: the user's key digest and/or the admin key's (either may be empty)."""

    id: str
    key_digest: str = ""
    admin_digest: str = ""
    csrf: str = ""

    @property
    def limit_digest(self) -> str:
        """The key whose rate limit the console's requests share with the API's."""
        return self.key_digest or self.admin_digest


def _redis_key(prefix: str, session_id: str) -> str:
    return f"{prefix}console:session:{hashlib.sha256(session_id.encode()).hexdigest()}"


async def create(r: aioredis.Redis, prefix: str, ttl_seconds: int, *, key_digest: str = "",
                 admin_digest: str = "") -> ConsoleSession:
    """A new session with a fresh id and CSRF token (never one the browser offered)."""
    session = ConsoleSession(secrets.token_urlsafe(ID_BYTES), key_digest, admin_digest, secrets.token_urlsafe(24))
    record = {k: v for k, v in asdict(session).items() if k != "id"}
    await r.set(_redis_key(prefix, session.id), json.dumps(record), ex=ttl_seconds)
    return session


async def load(r: aioredis.Redis, prefix: str, session_id: str | None) -> ConsoleSession | None:
    """The live session of this id, or None (unknown, expired or signed out)."""
    if not session_id or len(session_id) > 128:
        return None
    raw = await r.get(_redis_key(prefix, session_id))
    if raw is None:
        return None
    try:
        record = json.loads(raw)
        return ConsoleSession(session_id, str(record["key_digest"]), str(record["admin_digest"]), str(record["csrf"]))
    except (ValueError, KeyError, TypeError):
        return None


async def delete(r: aioredis.Redis, prefix: str, session_id: str | None) -> None:
    """End a session everywhere: every copy of its cookie stops working."""
    if session_id and len(session_id) <= 128:
        await r.delete(_redis_key(prefix, session_id))
