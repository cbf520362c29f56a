"""Queries known to be common: they matched at least the ranking budget's rows of the whole index.

A common word's count reaches the cap on every search (2,000 rows walked per term: a third of a recall
search's SQLite time at 100k messages), and a transcript is append-only (no store deletes a message), so a
count that reached the budget stays there. `ttl` bounds what a deletion made by hand could leave: such a
query planned as common a while longer (its newest matches rather than a ranking), never a wrong row.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict


class Common:
    """Queries that matched at least `limit` rows when last counted, for `ttl` seconds, at most `size` of them."""

    def __init__(self, limit: int, ttl: float = 300.0, size: int = 4096) -> None:
        self.limit = limit
        self.ttl = ttl
        self.size = size
        self._until: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._lock = threading.Lock()

    def holds(self, index: str, match: str, cap: int) -> bool:
        """Whether the query is known to match at least `cap` rows (never above `limit`)."""
        if cap > self.limit:
            return False
        with self._lock:
            until = self._until.get((index, match))
        return until is not None and until > time.monotonic()

    def counted(self, index: str, match: str, n: int) -> None:
        """A count of the query's matches: one that reached `limit` is kept."""
        if n >= self.limit:
            self.add(index, match)

    def add(self, index: str, match: str) -> None:
        with self._lock:
            self._until[(index, match)] = time.monotonic() + self.ttl
            self._until.move_to_end((index, match))
            while len(self._until) > self.size:
                self._until.popitem(last=False)
