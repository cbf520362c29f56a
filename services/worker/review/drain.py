"""Draining a session's reviews: run them one at a time, oldest first, until none is runnable here.

Any number of tasks may drain one session at once (a redelivery, a re-send, the next review's own
task): `claim_next` lets one worker hold the session's running review, so the others return at
once. A review already completed is never claimed again, so its fork never starts twice.
"""

from __future__ import annotations

from shared.ops.logs import session_id_var
from shared.stores import reviews
from services.worker.review.fork import ReviewRun
from services.worker.review.lease import ReviewLease
from services.worker.runtime import Runtime


def drain_reviews(runtime: Runtime, session_id: str) -> int:
    """Claim and run the session's due reviews until none is left or one runs elsewhere; returns how many ran."""
    lease_seconds = runtime.settings.review_lease_seconds
    ran = 0
    token = session_id_var.set(session_id)
    try:
        while True:
            review = reviews.claim_next(runtime.db, session_id, runtime.worker_id, lease_seconds)
            if review is None:
                return ran
            with ReviewLease(runtime.db, review.id, runtime.worker_id, lease_seconds) as lease:
                ReviewRun(runtime, review, lease).run()
            ran += 1
    finally:
        session_id_var.reset(token)
