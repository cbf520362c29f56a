"""Relays streamed text to the caller so a retried attempt never repeats what was already shown."""

from __future__ import annotations

from typing import Callable


class DeltaRelay:
    """Forwards only text beyond what earlier attempts already sent, so the deltas add up to one answer.

    A retry after a dropped stream starts the answer again; its first characters (usually the same
    words) are held back until the new attempt passes the length the caller has already seen.
    """

    def __init__(self, on_delta: Callable[[str], None] | None) -> None:
        self.on_delta = on_delta
        self.sent = 0
        self.attempt_text: list[str] = []
        self.attempt_chars = 0

    def keep_sent(self) -> None:
        """What was sent stays shown; the next call continues it, so all of its text is new."""
        self.sent = 0
        self.new_attempt()

    def new_attempt(self) -> None:
        self.attempt_text = []
        self.attempt_chars = 0

    def push(self, piece: str) -> None:
        """Take one delta of the current attempt."""
        self.attempt_text.append(piece)
        self.attempt_chars += len(piece)
        if self.on_delta is None or self.attempt_chars <= self.sent:
            return
        fresh = piece[len(piece) - (self.attempt_chars - self.sent):]
        self.sent = self.attempt_chars
        self.on_delta(fresh)
