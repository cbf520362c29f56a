"""How long to wait before retrying a model call, and a wait that a cancellation cuts short."""

from __future__ import annotations

import random
import threading
import time
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Callable

from shared.backoff import exponential
from shared.llm.types import Cancelled

POLL_SECONDS = 0.2


def backoff_delay(attempt: int, base: float, cap: float, rng: random.Random | None = None) -> float:
    """Exponential backoff for the given failed attempt (1-based), capped, plus up to 50% jitter."""
    delay = exponential(attempt, base, cap)
    return delay + (rng or random).uniform(0, 0.5 * delay)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds a Retry-After header asks for (delta-seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())


def retry_delay(attempt: int, retry_after: float | None, base: float, cap: float, retry_after_cap: float,
                rng: random.Random | None = None) -> float:
    """The provider's Retry-After when it sent one (capped), else jittered exponential backoff."""
    if retry_after is not None:
        return min(retry_after, retry_after_cap)
    return backoff_delay(attempt, base, cap, rng)


def pause(seconds: float, cancelled: Callable[[], bool]) -> None:
    """Sleep `seconds`, waking every 0.2 s to raise Cancelled as soon as `cancelled()` is true."""
    timer = threading.Event()
    deadline = time.monotonic() + seconds
    while True:
        if cancelled():
            raise Cancelled()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        timer.wait(min(POLL_SECONDS, remaining))
