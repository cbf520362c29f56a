"""Background reviews as a reviewer leaves them, made through the stores (for api, CLI and store tests)."""

from __future__ import annotations

import json

from shared.models.reviews import CallOutcome, Review, ReviewStatus
from shared.models.turns import Turn, TurnStatus
from shared.stores import reviews, turns
from shared.stores.reviews import Intervals, TurnCount

REVIEWER = "reviewer@tests"


def finished_turn(db, user_id: str, session_id: str, answer: str = "ok") -> Turn:
    """A turn accepted, claimed and completed with one answer, as a worker leaves it."""
    turn, _ = turns.create_turn(db, user_id, session_id, "question")
    claimed = turns.claim_next(db, session_id, "worker@tests", 30)
    turns.finish_turn(db, claimed.id, "worker@tests", TurnStatus.completed, output=answer,
                      messages=[{"role": "assistant", "content": answer, "turn_id": turn.id, "turn_position": 1}])
    return turns.get_turn(db, None, turn.id)


def due_review(db, user_id: str, session_id: str) -> Review:
    """One finished turn that makes a memory review due: the review, committed and queued."""
    turn = finished_turn(db, user_id, session_id)
    count = TurnCount(session_id=session_id, turn_id=turn.id, seq=turn.seq, iterations=1, memory_written=False,
                      iterations_after_skill_write=None, completed=True)
    return reviews.count_turn(db, count, Intervals(memory=1, skill=0), "You are the test prompt.", 60)


def completed_review(db, user_id: str, session_id: str, calls: list[tuple[str, dict, CallOutcome, dict]],
                     summary: str = "Saved.") -> Review:
    """A due review run to the end by REVIEWER with these (tool, arguments, outcome, result) calls."""
    review = due_review(db, user_id, session_id)
    reviews.claim_next(db, session_id, REVIEWER, 60)
    reviews.record_model_call(db, review.id, REVIEWER, {"role": "assistant", "content": None}, 900, 40)
    for index, (name, arguments, outcome, result) in enumerate(calls):
        call_id = f"call_{index}"
        reviews.start_call(db, review.id, REVIEWER, index, call_id, name, json.dumps(arguments))
        content = json.dumps(result)
        reviews.finish_call(db, review.id, REVIEWER, index, outcome, content,
                            {"role": "tool", "tool_call_id": call_id, "content": content})
    reviews.record_model_call(db, review.id, REVIEWER, {"role": "assistant", "content": summary}, 1000, 10)
    reviews.finish_review(db, review.id, REVIEWER, ReviewStatus.completed, summary=summary)
    return reviews.get_review(db, review.id)
