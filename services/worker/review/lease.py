"""The lease of one running review: renewed from a daemon thread, so a review whose worker died is taken over."""

from __future__ import annotations

import logging
import threading

from shared.db import Database
from shared.stores import reviews

log = logging.getLogger(__name__)

RENEWALS_PER_LEASE = 3


class ReviewLease:
    """Held for the life of one review run; `lost()` turns true once another worker owns the review."""

    def __init__(self, db: Database, review_id: str, worker_id: str, lease_seconds: float) -> None:
        self.db = db
        self.review_id = review_id
        self.worker_id = worker_id
        self.interval = lease_seconds / RENEWALS_PER_LEASE
        self._stop = threading.Event()
        self._lost = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"review-lease-{review_id}", daemon=True)

    def __enter__(self) -> "ReviewLease":
        self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop.set()
        self._thread.join()
        if exc_type is not None and not self.lost():
            self._release()

    def lost(self) -> bool:
        return self._lost.is_set()

    def _release(self) -> None:
        """Stopped by an error: let a retry claim the review at once instead of waiting out the lease."""
        try:
            reviews.release(self.db, self.review_id, self.worker_id)
        except Exception:
            log.warning("could not release review %s; it is taken over when its lease runs out", self.review_id,
                        exc_info=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                if not reviews.heartbeat(self.db, self.review_id, self.worker_id):
                    log.warning("review %s lost its lease to another worker", self.review_id)
                    self._lost.set()
                    return
            except Exception:
                log.warning("review heartbeat failed; retrying next tick", exc_info=True)
