"""A cap on the SSE streams one API key holds open in this api process."""

from __future__ import annotations

from collections import Counter

from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send


class Slot:
    """One open stream of one key; releasing twice is harmless."""

    def __init__(self, slots: "StreamSlots", key: str) -> None:
        self._slots, self._key, self._held = slots, key, True

    def release(self) -> None:
        if self._held:
            self._held = False
            self._slots.release(self._key)


class StreamSlots:
    """Counts open streams per key digest; past `cap` a key gets no slot."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._open: Counter[str] = Counter()

    def acquire(self, key: str) -> Slot | None:
        if self._open[key] >= self.cap:
            return None
        self._open[key] += 1
        return Slot(self, key)

    def release(self, key: str) -> None:
        self._open[key] -= 1
        if self._open[key] <= 0:
            del self._open[key]

    def open_streams(self, key: str) -> int:
        return self._open.get(key, 0)


class SlotStreamingResponse(StreamingResponse):
    """A streaming response that gives its slot back however it ends: done, disconnected or cancelled."""

    def __init__(self, *args, slot: Slot, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.slot = slot

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.slot.release()
