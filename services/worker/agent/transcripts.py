"""A per-process cache of session transcripts: each turn loads only the messages added since.

Messages are append-only, so a cached list stays a correct prefix of the transcript; whatever
another worker stored meanwhile arrives with the next `after=<last id>` read. The wire form of each
message (what the model is sent) is kept too, made once: rebuilding a long session's history on every
turn grew each turn's cost with the session. A message is final by the time its history is built (a user
message's `api_content` is fixed before the turn's first call, once).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from shared.db import Database
from shared.models.sessions import Message
from shared.stores import sessions
from services.worker.agent.history import Wire, to_wire

DEFAULT_CAPACITY = 256


class TranscriptCache:
    """The stored messages of recently active sessions, least recently used dropped first."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[str, list[Message]] = OrderedDict()
        self._wires: dict[str, dict[int, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def load(self, db: Database, session_id: str) -> list[Message]:
        """Every stored message of the session, in id order (a copy the caller may keep)."""
        after = self.last_id(session_id)
        extended = self.extend(session_id, after, sessions.list_messages(db, session_id, after=after))
        return extended if extended is not None else self.load(db, session_id)

    def last_id(self, session_id: str) -> int | None:
        """The id of the newest cached message of the session: read only the messages after it."""
        with self._lock:
            cached = self._entries.get(session_id)
        return cached[-1].id if cached else None

    def extend(self, session_id: str, after: int | None, newer: list[Message]) -> list[Message] | None:
        """The cached messages through `after` plus `newer` (read after it), kept; None when the cache no longer
        ends at `after` (dropped for room meanwhile): the caller reads the whole transcript instead."""
        with self._lock:
            cached = self._entries.pop(session_id, None)
            if (cached[-1].id if cached else None) != after:
                return None
            messages = (cached or []) + newer
            self._entries[session_id] = messages
            while len(self._entries) > self.capacity:
                dropped, _ = self._entries.popitem(last=False)
                self._wires.pop(dropped, None)
        return list(messages)

    def wire(self, session_id: str) -> Wire:
        """`to_wire` for this session's messages, each made once and kept while the session is cached."""
        with self._lock:
            made = self._wires.setdefault(session_id, {})

        def wired(message: Message) -> dict[str, Any]:
            found = made.get(message.id)
            if found is None:
                found = made[message.id] = to_wire(message)
            return found

        return wired
