"""Exponential backoff, the one rule every retry loop of the stack waits by (model calls, deliveries, restarts)."""

from __future__ import annotations

MAX_DOUBLINGS = 64  # past this the cap has long been reached; a float would overflow instead


def exponential(attempt: int, base: float, cap: float) -> float:
    """base, 2x base, 4x base … for attempt 1, 2, 3 …, never more than `cap`."""
    if attempt - 1 > MAX_DOUBLINGS:
        return cap
    return min(cap, base * 2 ** (attempt - 1))
