"""A per-process cache of session transcripts: each turn loads only the messages added since.

Messages are append-only, so a cached list stays a correct prefix of the transcript; whatever
another worker stored meanwhile arrives with the next `after=<last id>` read. The history the model is
sent is kept too, up to the session's newest user message: rebuilding a long session's whole history on
every turn grew each turn's cost with the session, so a turn builds only its own messages. Earlier turns'
messages are final (a user message's `api_content` is fixed before its turn's first call, once), and a
history split just before a user message builds the same as whole (a tool batch never spans one).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, NamedTuple

from shared.db import Database
from shared.models.sessions import Message
from shared.stores import sessions
from services.worker.agent.history import build_history

DEFAULT_CAPACITY = 256


class Built(NamedTuple):
    """The wire history of a session's first `through` messages (the last of them `last_id`)."""

    through: int
    last_id: int | None
    wires: list[dict[str, Any]]


class TranscriptCache:
    """The stored messages of recently active sessions, least recently used dropped first."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[str, list[Message]] = OrderedDict()
        self._built: dict[str, Built] = {}
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
                self._built.pop(dropped, None)
        return list(messages)

    def history(self, session_id: str, stored: list[Message]) -> list[dict[str, Any]]:
        """`build_history(stored)`, reusing what was built for the session's earlier turns (a new list)."""
        with self._lock:
            built = self._built.get(session_id) if session_id in self._entries else None
        start, prefix = 0, []
        if built and built.through <= len(stored) and (
                built.through == 0 or stored[built.through - 1].id == built.last_id):
            start, prefix = built.through, built.wires
        cut = next((i for i in range(len(stored) - 1, start - 1, -1) if stored[i].role == "user"), start)
        kept = prefix + build_history(stored[start:cut])
        with self._lock:
            if session_id in self._entries:
                self._built[session_id] = Built(cut, stored[cut - 1].id if cut else None, kept)
        return kept + build_history(stored[cut:])
