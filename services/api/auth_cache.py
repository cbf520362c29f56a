"""A short-lived, in-process memory of which user a key belongs to, so a request costs no key lookup.

Entries live AUTH_CACHE_SECONDS; a key revoked in the database stops working within that time.
Only successful lookups are remembered, keyed by the key's digest (never the key itself).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

from shared.models.users import User

AUTH_CACHE_SECONDS = 5.0
CAPACITY = 4096


class AuthCache:
    def __init__(self, ttl: float = AUTH_CACHE_SECONDS, capacity: int = CAPACITY) -> None:
        self.ttl = ttl
        self.capacity = capacity
        self._entries: OrderedDict[str, tuple[float, User]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, digest: str) -> User | None:
        with self._lock:
            entry = self._entries.get(digest)
            if entry is None or entry[0] < time.monotonic():
                self._entries.pop(digest, None)
                return None
            return entry[1]

    def put(self, digest: str, user: User) -> None:
        with self._lock:
            self._entries[digest] = (time.monotonic() + self.ttl, user)
            self._entries.move_to_end(digest)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
