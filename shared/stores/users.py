"""Users and API keys; keys are stored as SHA-256 digests only."""

from __future__ import annotations

import hashlib

from sqlalchemy.exc import IntegrityError
from sqlmodel import func, select

from shared.clock import utcnow
from shared.cron import schedule as schedules
from shared.db import Database
from shared.errors import Conflict, NotFound
from shared.ids import new_api_key, new_id
from shared.models.users import ApiKey, User


def hash_key(key: str) -> str:
    """The digest stored for a key (keys carry 256 bits of entropy, so a fast hash suffices)."""
    return hashlib.sha256(key.encode()).hexdigest()


def create_user(db: Database, name: str) -> User:
    """Create a user; the name is unique."""
    user = User(id=new_id("usr"), name=name)
    try:
        with db.write() as s:
            s.add(user)
    except IntegrityError as exc:
        raise Conflict(f"A user named {name!r} already exists.", code="user_exists") from exc
    return user


def get_user(db: Database, user_id: str) -> User:
    with db.read() as s:
        user = s.get(User, user_id)
    if user is None:
        raise NotFound("No such user.")
    return user


def find_user(db: Database, id_or_name: str) -> User:
    """A user by id or by name."""
    with db.read() as s:
        user = s.get(User, id_or_name) or s.exec(select(User).where(User.name == id_or_name)).first()
    if user is None:
        raise NotFound(f"No user {id_or_name!r}.")
    return user


def set_timezone(db: Database, id_or_name: str, timezone: str | None) -> User:
    """The IANA zone the user's scheduled jobs are read in (None: the server's); an unknown zone is refused."""
    if timezone is not None:
        schedules.zone(timezone)
    user = find_user(db, id_or_name)
    with db.write() as s:
        row = s.get(User, user.id, with_for_update=True)
        row.timezone = timezone
        s.add(row)
    return row


def list_users(db: Database) -> list[User]:
    with db.read() as s:
        return list(s.exec(select(User).order_by(User.created_at)))


def create_key(db: Database, user_id: str) -> tuple[ApiKey, str]:
    """Issue a key for a user; the plaintext is returned once and never stored."""
    get_user(db, user_id)
    plaintext = new_api_key()
    key = ApiKey(id=new_id("key"), user_id=user_id, key_hash=hash_key(plaintext), prefix=plaintext[:10])
    with db.write() as s:
        s.add(key)
    return key, plaintext


def list_keys(db: Database, user_id: str) -> list[ApiKey]:
    """A user's keys, revoked ones included, oldest first."""
    get_user(db, user_id)
    with db.read() as s:
        return list(s.exec(select(ApiKey).where(ApiKey.user_id == user_id).order_by(ApiKey.created_at, ApiKey.id)))


def get_key(db: Database, key_id: str) -> ApiKey:
    """Any user's key by its id (operator use); NotFound when there is none."""
    with db.read() as s:
        key = s.get(ApiKey, key_id)
    if key is None:
        raise NotFound("No such key.")
    return key


def revoke_key(db: Database, user_id: str, key_id: str) -> ApiKey:
    """Revoke one of a user's keys; the row stays as the audit trail. Revoking twice keeps the first time.

    A key of another user answers 404, like a key that does not exist.
    """
    with db.write() as s:
        key = s.get(ApiKey, key_id, with_for_update=True)
        if key is None or key.user_id != user_id:
            raise NotFound("No such key.")
        if key.revoked_at is None:
            key.revoked_at = utcnow()
            s.add(key)
    return key


def authenticate(db: Database, plaintext: str) -> User | None:
    """The user owning an unrevoked key, or None."""
    return authenticate_digest(db, hash_key(plaintext))


def authenticate_digest(db: Database, digest: str) -> User | None:
    """The user owning the unrevoked key of this digest, or None (a console session keeps only the digest)."""
    with db.read() as s:
        row = s.exec(
            select(User)
            .join(ApiKey, ApiKey.user_id == User.id)
            .where(ApiKey.key_hash == digest, ApiKey.revoked_at.is_(None))
        ).first()
    return row


def count_users(db: Database) -> int:
    """How many users this server has (the unsandboxed terminal serves one only)."""
    with db.read() as s:
        return s.exec(select(func.count()).select_from(User)).one()
