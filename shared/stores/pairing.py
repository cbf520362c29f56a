"""Pairing: who on a chat platform may reach the agent. Codes follow Hermes Agent's rules exactly.

8 characters from an alphabet without 0/O/1/I, drawn with `secrets.choice`, stored only as
SHA-256(salt + code); valid 1 hour; at most 3 pending per platform; one request per platform user per
10 minutes; 5 failed approvals lock the platform's approvals for an hour.

Beyond Hermes Agent: a new request on a full platform evicts the oldest pending one instead of being refused.
A cap per requester would not help, since each requester already holds at most one request; refusing left
three throwaway accounts able to close pairing for everyone for as long as they kept asking. Eviction keeps
pairing open to whoever asks last, and the owner may dismiss any request by its id or platform user id.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from shared.clock import utcnow
from shared.db import Database
from shared.errors import Conflict, NotFound, RateLimited
from shared.ids import new_id
from shared.models.gateway import GatewayIdentity, PairingLock, PairingRequest
from shared.models.users import User
from shared.stores import users

ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
CODE_TTL = timedelta(hours=1)
MAX_PENDING = 3
REQUEST_INTERVAL = timedelta(minutes=10)
MAX_FAILURES = 5
LOCKOUT = timedelta(hours=1)


@dataclass(frozen=True)
class Issued:
    """What an unknown platform user gets: a code, or why none (`wait`, `busy`)."""

    status: str
    code: str | None = None
    expires_at: datetime | None = None


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def _digest(salt: str, code: str) -> str:
    return hashlib.sha256(bytes.fromhex(salt) + code.encode()).hexdigest()


def find_identity(db: Database, platform: str, platform_user_id: str) -> tuple[GatewayIdentity, User] | None:
    """The bound identity and its user, or None."""
    with db.read() as s:
        row = s.exec(select(GatewayIdentity, User).join(User, User.id == GatewayIdentity.user_id)
                     .where(GatewayIdentity.platform == platform,
                            GatewayIdentity.platform_user_id == platform_user_id)).first()
    return tuple(row) if row else None


def is_bound_user(db: Database, user_id: str) -> bool:
    """True when a platform identity is bound to this user."""
    with db.read() as s:
        return s.exec(select(GatewayIdentity.id).where(GatewayIdentity.user_id == user_id)).first() is not None


def request_code(db: Database, platform: str, platform_user_id: str, display_name: str) -> Issued:
    """A fresh code for an unknown platform user, within the per-user interval and the per-platform cap."""
    now = utcnow()
    code, salt = new_code(), secrets.token_hex(16)
    with db.write() as s:
        pending = list(s.exec(select(PairingRequest).where(PairingRequest.platform == platform,
                                                           PairingRequest.status == "pending")))
        live = [p for p in pending if p.expires_at > now]
        for stale in pending:
            if stale.expires_at <= now and stale.created_at <= now - REQUEST_INTERVAL:
                s.delete(stale)
        mine = [p for p in pending if p.platform_user_id == platform_user_id]
        if any(p.created_at > now - REQUEST_INTERVAL for p in mine):
            return Issued("wait")
        others = sorted((p for p in live if p.platform_user_id != platform_user_id), key=lambda p: p.created_at)
        for oldest in others[:max(0, len(others) - MAX_PENDING + 1)]:
            s.delete(oldest)
        for old in mine:
            if old in live:
                s.delete(old)
        row = PairingRequest(id=new_id("pair"), platform=platform, platform_user_id=platform_user_id,
                             display_name=display_name[:128], salt=salt, code_hash=_digest(salt, code),
                             expires_at=now + CODE_TTL)
        s.add(row)
    return Issued("code", code, row.expires_at)


def list_pending(db: Database) -> list[PairingRequest]:
    now = utcnow()
    with db.read() as s:
        rows = s.exec(select(PairingRequest).where(PairingRequest.status == "pending")
                      .order_by(PairingRequest.created_at))
        return [r for r in rows if r.expires_at > now]


def list_bound(db: Database) -> list[tuple[GatewayIdentity, User]]:
    with db.read() as s:
        rows = s.exec(select(GatewayIdentity, User).join(User, User.id == GatewayIdentity.user_id)
                      .order_by(GatewayIdentity.created_at))
        return [tuple(r) for r in rows]


def _lock_row(s, platform: str) -> PairingLock:
    row = s.get(PairingLock, platform, with_for_update=True)
    if row is None:
        row = PairingLock(platform=platform)
        s.add(row)
        s.flush()
    return row


def approve(db: Database, platform: str, code: str, user_name: str | None) -> GatewayIdentity:
    """Bind the platform user who holds `code` to `user_name` (or a new user named after them).

    Case-insensitive. A wrong or expired code counts as a failure; the fifth locks approvals for the platform
    for an hour (RateLimited), and while locked even a valid code is refused.
    """
    return _bind(db, _matching(db, platform, code), user_name)


def deny(db: Database, platform: str, code: str | None = None, *, request_id: str | None = None,
         platform_user_id: str | None = None) -> PairingRequest:
    """Refuse the request that holds `code` (or has this id, or comes from this platform user): its code stops
    working and frees its slot; nobody is bound.

    By code, the same lookup and failure count as `approve`, so denying cannot be used to guess codes either.
    """
    if code is None:
        return _dismiss(db, platform, request_id=request_id, platform_user_id=platform_user_id)[0]
    request = _matching(db, platform, code)
    with db.write() as s:
        lock = _lock_row(s, platform)
        lock.failures = 0
        s.add(lock)
        row = s.get(PairingRequest, request.id)
        if row is not None:
            s.delete(row)
    return request


def _dismiss(db: Database, platform: str, *, request_id: str | None = None,
            platform_user_id: str | None = None) -> list[PairingRequest]:
    """Refuse the pending requests the owner names by request id or platform user id (no code needed: the
    owner sees both in the list); NotFound when none matches."""
    if request_id is None and platform_user_id is None:
        raise ValueError("name a request id or a platform user id")
    with db.write() as s:
        query = select(PairingRequest).where(PairingRequest.platform == platform, PairingRequest.status == "pending")
        if request_id is not None:
            query = query.where(PairingRequest.id == request_id)
        if platform_user_id is not None:
            query = query.where(PairingRequest.platform_user_id == platform_user_id)
        rows = list(s.exec(query))
        for row in rows:
            s.delete(row)
    if not rows:
        raise NotFound("No pending pairing request like that.", code="pairing_request_unknown")
    return rows


def _matching(db: Database, platform: str, code: str) -> PairingRequest:
    """The live pending request holding `code`; a miss counts as a failure (five lock the platform 1 h)."""
    now, code = utcnow(), code.strip().upper()
    with db.write() as s:
        lock = _lock_row(s, platform)
        if lock.locked_until is not None and lock.locked_until > now:
            raise RateLimited("Too many failed approvals: approvals for this platform are locked for an hour.",
                              code="pairing_locked")
        match = next((p for p in s.exec(select(PairingRequest).where(PairingRequest.platform == platform,
                                                                     PairingRequest.status == "pending"))
                      if p.expires_at > now and secrets.compare_digest(p.code_hash, _digest(p.salt, code))), None)
        if match is None:
            lock.failures += 1
            if lock.failures >= MAX_FAILURES:
                lock.failures, lock.locked_until = 0, now + LOCKOUT
            s.add(lock)
    if match is None:
        raise NotFound("No pending pairing code like that (wrong or expired).", code="pairing_code_unknown")
    return match


def _bind(db: Database, request: PairingRequest, user_name: str | None) -> GatewayIdentity:
    user = users.find_user(db, user_name) if user_name else _new_user(db, request.display_name,
                                                                       request.platform_user_id)
    with db.write() as s:
        lock = _lock_row(s, request.platform)
        lock.failures = 0
        s.add(lock)
        row = s.get(PairingRequest, request.id)
        if row is not None:
            s.delete(row)
    return bind(db, request.platform, request.platform_user_id, user.id, request.display_name)


def _new_user(db: Database, display_name: str, platform_user_id: str) -> User:
    """A user named after the platform's display name (made name-safe), numbered when taken."""
    base = "".join(c if c.isalnum() or c in "._-" else "-" for c in display_name).strip("-._")[:48]
    base = base or f"tg-{platform_user_id}"
    for n in range(1, 50):
        try:
            return users.create_user(db, base if n == 1 else f"{base}-{n}")
        except Conflict:
            continue
    return users.create_user(db, f"{base}-{secrets.token_hex(3)}")


def bind(db: Database, platform: str, platform_user_id: str, user_id: str, display_name: str = "") -> GatewayIdentity:
    """Bind a platform identity to a user (idempotent: an existing binding is kept)."""
    row = GatewayIdentity(id=new_id("gid"), platform=platform, platform_user_id=platform_user_id,
                          user_id=user_id, display_name=display_name[:128])
    try:
        with db.write() as s:
            s.add(row)
    except IntegrityError:
        found = find_identity(db, platform, platform_user_id)
        if found is None:
            raise
        return found[0]
    return row


def prebind(db: Database, platform: str, platform_user_id: str, display_name: str) -> tuple[GatewayIdentity, User]:
    """An allow-listed platform user: bound at once to a user named `tg-<id>` (created when missing)."""
    name = f"tg-{platform_user_id}"
    try:
        user = users.find_user(db, name)
    except NotFound:
        try:
            user = users.create_user(db, name)
        except Conflict:
            user = users.find_user(db, name)
    identity = bind(db, platform, platform_user_id, user.id, display_name)
    return identity, users.get_user(db, identity.user_id)


def revoke(db: Database, platform: str, platform_user_id: str) -> GatewayIdentity:
    """Unbind a platform identity; the user and their data stay."""
    with db.write() as s:
        row = s.exec(select(GatewayIdentity).where(GatewayIdentity.platform == platform,
                                                   GatewayIdentity.platform_user_id == platform_user_id)).first()
        if row is None:
            raise NotFound("No such bound identity.", code="identity_not_found")
        s.delete(row)
    return row
