"""The one clock every store reads, so tests can move time instead of waiting for it."""

from __future__ import annotations

from datetime import datetime, timezone


def utcnow() -> datetime:
    """Now, timezone-aware UTC."""
    return datetime.now(timezone.utc)
