"""A per-process cache of session transcripts: each turn loads only the messages added since.

Messages are append-only, so a cached list stays a correct prefix of the transcript; whatever
another worker stored meanwhile arrives with the next `after=<last id>` read.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from shared.db import Database
from shared.models.sessions import Message
from shared.stores import sessions

DEFAULT_CAPACITY = 256


class TranscriptCache:
    """The stored messages of recently active sessions, least recently used dropped first."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[str, list[Message]] = OrderedDict()
        self._lock = threading.Lock()

    def load(self, db: Database, session_id: str) -> list[Message]:
        """Every stored message of the session, in id order (a copy the caller may keep)."""
        with self._lock:
            cached = self._entries.pop(session_id, None)
        after = cached[-1].id if cached else None
        messages = (cached or []) + sessions.list_messages(db, session_id, after=after)
        with self._lock:
            self._entries[session_id] = messages
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return list(messages)
