"""Housekeeping besides the turn sweep: staged memory writes past their time, and turn event streams
that never got their expiry.

A stream gets its TTL with the turn's last event; a worker that died first leaves it without one.
Such a stream whose turn is finished (or gone from the database) gets the rest of its TTL, counted
from its newest entry in Redis's own time, or is deleted when that is already over. Streams of
queued and running turns are left alone. Each sweep examines a bounded number of keys (SCAN with
COUNT) and keeps its cursor in Redis, so the next sweep continues where this one stopped.
Approvals nobody decided within APPROVAL_TIMEOUT_SECONDS are denied, and questions nobody answered within
CLARIFY_TIMEOUT_SECONDS settled as "no answer", by `expire_approvals`, which the
turn sweep runs every SWEEP_INTERVAL_SECONDS (an hourly pass would be far too late for a 300 s
timeout): their turns resume and the model hears the refusal, even when no worker was alive to see
the time pass.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Callable

import redis
from pydantic import BaseModel
from sqlmodel import select

from shared.db import Database
from shared.models.turns import TERMINAL_STATUSES, Turn
from shared.queue.turns import send_turn
from shared.stores import approvals, clarifications, memory_staged, skill_staged

log = logging.getLogger(__name__)

STREAM_PATTERN = "turn:*:events"
SCAN_COUNT = 500
FINISHED = {s.value for s in TERMINAL_STATUSES}


@dataclass(frozen=True)
class StreamSweep:
    examined: int  # streams looked at
    expiring: int  # given the rest of their TTL
    deleted: int
    done: bool  # the scan went round the whole keyspace


def turn_id_of(key: str) -> str:
    return key[len("turn:"):-len(":events")]


def _finished_or_gone(db: Database, turn_ids: list[str]) -> set[str]:
    with db.read() as s:
        known = dict(s.exec(select(Turn.id, Turn.status).where(Turn.id.in_(turn_ids))).all())
    return {t for t in turn_ids if known.get(t) is None or known[t] in FINISHED}


def _newest_entry_ms(r: redis.Redis, key: str) -> int | None:
    newest = r.xrevrange(key, count=1)
    return int(newest[0][0].split("-", 1)[0]) if newest else None


def trim_streams(db: Database, r: redis.Redis, *, ttl_seconds: int, scan_limit: int, cursor_key: str) -> StreamSweep:
    """Give finished turns' streams without a TTL the rest of it (or delete them); scans ~scan_limit keys."""
    cursor = int(r.get(cursor_key) or 0)
    seen: list[str] = []
    orphans: list[str] = []
    for _ in range(max(1, scan_limit // SCAN_COUNT)):
        cursor, keys = r.scan(cursor, match=STREAM_PATTERN, count=SCAN_COUNT)
        seen += keys
        if cursor == 0:
            break
    if seen:
        pipe = r.pipeline(transaction=False)
        for key in seen:
            pipe.ttl(key)
        orphans = [k for k, ttl in zip(seen, pipe.execute()) if ttl == -1]
    r.set(cursor_key, cursor)
    expiring = deleted = 0
    if orphans:
        seconds, micros = r.time()
        now_ms = int(seconds) * 1000 + int(micros) // 1000
        finished = _finished_or_gone(db, [turn_id_of(k) for k in orphans])
        for key in (k for k in orphans if turn_id_of(k) in finished):
            newest = _newest_entry_ms(r, key)
            left = ttl_seconds - max(0, now_ms - newest) // 1000 if newest is not None else 0
            if left > 0:
                expiring += bool(r.expire(key, int(left)))
            else:
                deleted += r.delete(key)
    return StreamSweep(len(seen), expiring, deleted, cursor == 0)


def expire_approvals(db: Database, now: datetime, send: Callable[[str, BaseModel], None]) -> int:
    """Deny the approvals and settle the questions (`clarify`) past their time, and send their turns on;
    returns how many expired.

    A failed send is left to the turn sweep: the turn is already marked sent, so it is re-sent later.
    """
    resumed = [(row.id, turn) for row, turn in approvals.expire_due(db, now)]
    resumed += [(row.id, turn) for row, turn in clarifications.expire_due(db, now)]
    for parked_on, turn in resumed:
        send_turn(send, turn.id, turn.session_id, approval_id=parked_on)
    if resumed:
        log.info("expiry sweep: %d approval(s) or question(s) expired unanswered; their turns resume", len(resumed))
    return len(resumed)


def sweep(db: Database, r: redis.Redis, *, now: datetime, ttl_seconds: int, scan_limit: int,
          cursor_key: str) -> tuple[int, StreamSweep]:
    """Expire staged memory and skill writes, then trim orphaned streams; returns (writes expired, stream sweep)."""
    staged = memory_staged.expire_staged(db, now) + skill_staged.expire_staged(db, now)
    streams = trim_streams(db, r, ttl_seconds=ttl_seconds, scan_limit=scan_limit, cursor_key=cursor_key)
    level = logging.INFO if staged or streams.expiring or streams.deleted else logging.DEBUG
    log.log(level, "expiry sweep: %d staged write(s) expired; streams: %d examined, %d given a TTL, %d deleted",
            staged, streams.examined, streams.expiring, streams.deleted)
    return staged, streams
