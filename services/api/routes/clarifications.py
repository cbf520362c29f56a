"""Questions the agent parked a turn on (`clarify`), and the caller's answers.

`GET /v1/clarifications?status=pending` lists the caller's open questions, oldest first. Answering one with
one of its choices moves its turn back to the queue and enqueues `resume_turn`, which continues the turn from
the parked `clarify` call with that choice.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from services.api.deps import CurrentUser, DbDep, EnqueueDep
from shared.queue.turns import send_turn
from services.api.schemas import error_responses
from shared.models.clarifications import ClarificationAnswer, ClarificationList, ClarificationPublic
from shared.stores import clarifications

router = APIRouter(prefix="/v1/clarifications", tags=["clarifications"], responses=error_responses(401, 422))


@router.get("", response_model=ClarificationList)
def list_clarifications(
    db: DbDep,
    user: CurrentUser,
    status: Annotated[Literal["pending"], Query(description="pending: questions waiting for an answer.")] = "pending",
    limit: Annotated[int, Query(ge=1, le=200)] = 100,
) -> ClarificationList:
    """The caller's open questions, oldest first."""
    rows = clarifications.list_pending(db, user.id, limit)
    return ClarificationList(data=[ClarificationPublic.of(row) for row in rows])


@router.post("/{clarification_id}", response_model=ClarificationPublic, responses=error_responses(404, 409))
def answer_clarification(clarification_id: str, body: ClarificationAnswer, db: DbDep, enqueue: EnqueueDep,
                         user: CurrentUser) -> ClarificationPublic:
    """Answer with one of the question's choices; 409 once answered or expired, 404 for another user's."""
    answered = clarifications.answer(db, user.id, clarification_id, body.choice)
    if answered.resume is not None:
        send_turn(enqueue, answered.resume.id, answered.resume.session_id, approval_id=answered.clarification.id)
    answered.raise_conflict()
    return ClarificationPublic.of(answered.clarification)
