"""Sliding one-minute windows per key (a client address, a route name), in a table of bounded size."""

from __future__ import annotations

import time
from collections import OrderedDict, deque

PERIOD_SECONDS = 60.0


class Windows:
    """At most `limit` hits per key in any `period` seconds; the least recently used keys are forgotten past
    `max_keys`, so rotating keys cannot grow the table without end."""

    def __init__(self, limit: int, *, max_keys: int = 10_000, period: float = PERIOD_SECONDS) -> None:
        self.limit, self.max_keys, self.period = limit, max_keys, period
        self.hits: OrderedDict[str, deque[float]] = OrderedDict()

    def take(self, key: str) -> bool:
        """Count one hit for `key`; False (nothing counted) when its window is full."""
        if self.limit <= 0:
            return True
        now = time.monotonic()
        hits = self.hits.pop(key, None) or deque()
        while hits and hits[0] <= now - self.period:
            hits.popleft()
        self.hits[key] = hits
        if len(self.hits) > self.max_keys:
            self.hits.popitem(last=False)
        if len(hits) >= self.limit:
            return False
        hits.append(now)
        return True

    def full(self, key: str) -> bool:
        """True when `key` has no hit left in its window (nothing counted)."""
        hits = self.hits.get(key)
        if self.limit <= 0 or not hits:
            return False
        now = time.monotonic()
        return sum(1 for t in hits if t > now - self.period) >= self.limit

    def give_back(self, key: str) -> None:
        """Undo the latest hit of `key` (the request turned out not to count)."""
        hits = self.hits.get(key)
        if hits:
            hits.pop()
