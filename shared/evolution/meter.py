"""A run's budget and cost: metric calls, model calls and tokens, with cancellation checked as it goes."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from shared.llm.types import Usage

CHECK_EVERY_SECONDS = 1.0


class Stopped(Exception):
    """The run must stop now: cancelled by the owner, or its budget is spent."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason  # "cancelled" or "budget"
        self.message = message

    @classmethod
    def by_owner(cls) -> "Stopped":
        return cls("cancelled", "Cancelled by the owner; nothing was written.")


@dataclass
class Meter:
    """Counts what a run spends; `stop_requested` is asked (at most once a second) whether it was cancelled."""

    metric_budget: int
    token_budget: int
    stop_requested: Callable[[], bool] = lambda: False
    on_change: Callable[["Meter"], None] = lambda meter: None
    metric_calls: int = 0
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    stage: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _checked_at: float = 0.0
    _cancelled: bool = False

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def progress(self) -> float:
        return min(1.0, self.metric_calls / self.metric_budget) if self.metric_budget else 0.0

    def cancelled(self) -> bool:
        """True once the owner asked to stop (the model client also checks this between retries)."""
        now = time.monotonic()
        if not self._cancelled and now - self._checked_at >= CHECK_EVERY_SECONDS:
            self._checked_at = now
            self._cancelled = bool(self.stop_requested())
        return self._cancelled

    def check(self) -> None:
        """Raise Stopped before a model call that the run may no longer make."""
        if self.cancelled():
            raise Stopped.by_owner()
        if self.tokens >= self.token_budget:
            raise Stopped("budget", f"The run spent its token budget ({self.token_budget:,}); nothing was written.")

    def spent(self, usage: Usage) -> None:
        with self._lock:
            self.model_calls += 1
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens

    def metric_call(self) -> None:
        with self._lock:
            self.metric_calls += 1
        self.on_change(self)

    def at(self, stage: str) -> None:
        self.stage = stage
        self.on_change(self)
