"""The per-turn iteration budget: how many tool-calling model calls one turn may make."""

from __future__ import annotations

import threading

BUDGET_NOTICE = (
    "You've reached the maximum number of tool-calling iterations allowed. Please provide a final response "
    "summarizing what you've found and accomplished so far, without calling any more tools."
)
BUDGET_NOTICE_NAME = "budget_notice"


class IterationBudget:
    """A thread-safe counter; a fresh one per turn (the budget never carries across turns)."""

    def __init__(self, max_total: int, used: int = 0) -> None:
        self.max_total = max_total
        self._used = used
        self._lock = threading.Lock()

    def consume(self) -> bool:
        """Take one iteration; False when none is left."""
        with self._lock:
            if self._used >= self.max_total:
                return False
            self._used += 1
            return True

    @property
    def used(self) -> int:
        return self._used

    @property
    def remaining(self) -> int:
        with self._lock:
            return max(0, self.max_total - self._used)
