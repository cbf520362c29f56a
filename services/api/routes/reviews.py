"""What background reviews of the caller's sessions decided and wrote.

A session of another user is answered like a missing one (404); without `session_id` the caller's
own reviews are listed, newest first.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from services.api.deps import CurrentUser, DbDep
from services.api.schemas import error_responses
from shared.models.reviews import ReviewList, ReviewPublic
from shared.stores import reviews, sessions

router = APIRouter(prefix="/v1/reviews", tags=["reviews"], responses=error_responses(401, 422))


@router.get("", response_model=ReviewList, responses=error_responses(404))
def list_reviews(
    db: DbDep,
    user: CurrentUser,
    session_id: Annotated[str | None, Query(max_length=64, description="Only this session of yours.")] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> ReviewList:
    """Reviews newest first: trigger, status, model calls, tokens, and every memory or skill write with its result."""
    if session_id is not None:
        sessions.get_session(db, user.id, session_id)
    found = reviews.list_reviews(db, user.id, session_id=session_id, limit=limit)
    return ReviewList(data=[ReviewPublic.of(review, calls) for review, calls in found])
