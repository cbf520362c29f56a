"""Memory writes staged for approval (MEMORY_WRITE_APPROVAL): stage, list, decide, expire.

Approving replays the stored request through `MemoryStore.write`, so the rules of the moment apply;
a replay the rules refuse leaves the write pending, and the caller reports the rule's error.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import update
from sqlmodel import select

from shared.clock import utcnow
from shared.config import Settings
from shared.db import Database
from shared.errors import InvalidState, NotFound
from shared.ids import new_id
from shared.models.memory import MemoryStagedWrite, StagedStatus
from shared.stores.memory import MemoryRequest, MemoryStore, WriteResult

PENDING = StagedStatus.pending.value


def stage(db: Database, settings: Settings, user_id: str, request: MemoryRequest,
          session_id: str | None = None) -> MemoryStagedWrite:
    """Keep a write for a person to decide on; it expires after MEMORY_STAGED_TTL_SECONDS."""
    now = utcnow()
    row = MemoryStagedWrite(id=new_id("msw"), user_id=user_id, session_id=session_id, target=request.target,
                            summary=request.summary(), request=request.to_json(), created_at=now,
                            expires_at=now + timedelta(seconds=settings.memory_staged_ttl_seconds))
    with db.write() as s:
        s.add(row)
    return row


def list_pending(db: Database, user_id: str) -> list[MemoryStagedWrite]:
    """This user's undecided, unexpired writes, oldest first."""
    query = (select(MemoryStagedWrite)
             .where(MemoryStagedWrite.user_id == user_id, MemoryStagedWrite.status == PENDING,
                    MemoryStagedWrite.expires_at > utcnow())
             .order_by(MemoryStagedWrite.created_at, MemoryStagedWrite.id))
    with db.read() as s:
        return list(s.exec(query))


def decide(db: Database, settings: Settings, user_id: str, staged_id: str,
           approve: bool) -> tuple[MemoryStagedWrite, WriteResult | None]:
    """Approve (replay the write) or deny one pending write; 404 for another user's, 409 once decided."""
    now = utcnow()
    with db.write() as s:
        row = s.exec(select(MemoryStagedWrite).where(MemoryStagedWrite.id == staged_id).with_for_update()).first()
        if row is None or row.user_id != user_id:
            raise NotFound("No such staged memory write.", code="staged_write_not_found")
        if row.status == PENDING and row.expires_at <= now:
            row.status, row.decided_at = StagedStatus.expired.value, now
        if row.status != PENDING:
            decided = row.status
        else:
            decided = None
            result = MemoryStore.for_user(settings, user_id).write(MemoryRequest(**row.request)) if approve else None
            if result is None or result.ok:
                row.status = (StagedStatus.approved if approve else StagedStatus.denied).value
                row.decided_at = now
        s.add(row)
    if decided is not None:
        raise InvalidState(f"This staged memory write was already {decided}.", code="staged_write_decided")
    return row, result


def expire_staged(db: Database, now: datetime) -> int:
    """Mark every pending write whose time ran out as expired; the curator's sweep calls this. Returns how many."""
    with db.write() as s:
        result = s.execute(
            update(MemoryStagedWrite)
            .where(MemoryStagedWrite.status == PENDING, MemoryStagedWrite.expires_at <= now)
            .values(status=StagedStatus.expired.value, decided_at=now)
        )
        return result.rowcount or 0
