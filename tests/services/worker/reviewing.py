"""Helpers for the background review tests: catching sent reviews, running turns, finding review requests."""

from __future__ import annotations

from shared.models.reviews import ReviewTrigger
from shared.stores import reviews
from services.worker.agent.drain import drain_session
from services.worker.review import trigger
from services.worker.review.prompt import HEADERS
from tests.fakes.replies import latest_user_text
from tests.services.worker.helpers import post_turn, wait_finished

MEMORY, SKILL, BOTH = (HEADERS[t] for t in (ReviewTrigger.memory, ReviewTrigger.skill, ReviewTrigger.both))


class SentReviews:
    """Stands in for the broker: records each review sent, with its status in the database at that moment."""

    def __init__(self, db) -> None:
        self.db = db
        self.sent: list[tuple[str, dict, str]] = []

    def __call__(self, name: str, payload) -> None:
        self.sent.append((name, payload.model_dump(), reviews.get_review(self.db, payload.review_id).status))

    @property
    def review_ids(self) -> list[str]:
        return [payload["review_id"] for _, payload, _ in self.sent]


def catch_sends(db, monkeypatch) -> SentReviews:
    recorder = SentReviews(db)
    monkeypatch.setattr(trigger, "enqueue", recorder)
    return recorder


def turns(db, runtime, user_id: str, session_id: str, *inputs: str) -> list:
    """Post turns and run them in this process; returns each finished turn."""
    posted = [post_turn(db, user_id, session_id, text) for text in inputs]
    drain_session(runtime, session_id)
    return [wait_finished(db, t.id) for t in posted]


def review_requests(model, header: str) -> list[dict]:
    """Bodies of the requests a review with this header sent, in order."""
    return [r.body for r in model.requests if r.body and latest_user_text(r.body).startswith(header)]


def turn_requests(model) -> list[dict]:
    """Bodies of the requests turns sent (everything but reviews)."""
    return [r.body for r in model.requests
            if r.body and not latest_user_text(r.body).startswith("[Background review")]
