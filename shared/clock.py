"""The one clock every store reads, so tests can move time instead of waiting for it.

Two ways to move it, both added to the real time:
- HSTACK_CLOCK_OFFSET_SECONDS in a process's environment (read at each call, so a process started
  with it lives in the future; for demos and real-process tests, never production);
- `advance(delta)` / `travel(delta)` inside one process (tests: every thread sees the same shift).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Iterator

OFFSET_ENV = "HSTACK_CLOCK_OFFSET_SECONDS"

_shift = timedelta(0)


@lru_cache(maxsize=8)
def _parse_offset(raw: str) -> timedelta:
    try:
        return timedelta(seconds=float(raw))
    except ValueError:
        raise ValueError(f"{OFFSET_ENV} must be a number of seconds, not {raw!r}") from None


def offset() -> timedelta:
    """How far this process's clock is ahead of real time."""
    raw = os.environ.get(OFFSET_ENV)
    return _shift + (_parse_offset(raw.strip()) if raw and raw.strip() else timedelta(0))


def utcnow() -> datetime:
    """Now, timezone-aware UTC (moved by the offset, if any)."""
    return datetime.now(timezone.utc) + offset()


def advance(delta: timedelta) -> None:
    """Move this process's clock forward by `delta` (a negative delta moves it back)."""
    global _shift
    _shift += delta


def reset() -> None:
    """Undo every `advance` of this process."""
    global _shift
    _shift = timedelta(0)


@contextmanager
def travel(delta: timedelta) -> Iterator[None]:
    """Live `delta` ahead inside the block; the clock comes back afterwards."""
    advance(delta)
    try:
        yield
    finally:
        advance(-delta)
