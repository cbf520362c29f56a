"""Human decisions on commands the approval gate parked, and the record of every decision it took.

`GET /v1/approvals?status=pending` lists the caller's open questions (oldest first, the order they
resolve in); `status=all` adds every recorded decision, newest first. Deciding one moves its turn back
to the queue and enqueues `resume_turn`, which continues the turn from the parked tool call.
"""

from __future__ import annotations

import logging
from typing import Annotated, Literal

from fastapi import APIRouter, Query

from services.api.deps import CurrentUser, DbDep, Enqueue, EnqueueDep
from services.api.schemas import error_responses
from shared.db import Database
from shared.models.approvals import Approval, ApprovalDecision, ApprovalList, ApprovalPublic
from shared.models.turns import Turn
from shared.queue.names import RESUME_TURN
from shared.queue.payloads import ResumeTurn
from shared.stores import approvals

log = logging.getLogger(__name__)

router = APIRouter(prefix="/v1/approvals", tags=["approvals"], responses=error_responses(401, 422))


@router.get("", response_model=ApprovalList)
def list_approvals(
    db: DbDep,
    user: CurrentUser,
    status: Annotated[Literal["pending", "all"], Query(description="pending: open questions; all: every decision.")]
    = "pending",
    limit: Annotated[int, Query(ge=1, le=200)] = 100,
) -> ApprovalList:
    """The caller's approvals: open questions, or every recorded decision (who, when, command, verdict, scope)."""
    rows = approvals.list_approvals(db, user.id, pending_only=status == "pending", limit=limit)
    return ApprovalList(data=[ApprovalPublic.of(row) for row in rows])


@router.post("/{approval_id}", response_model=ApprovalPublic, responses=error_responses(404, 409))
def decide_approval(approval_id: str, body: ApprovalDecision, db: DbDep, enqueue: EnqueueDep,
                    user: CurrentUser) -> ApprovalPublic:
    """Approve (once, or the same pattern for the rest of the session) or deny; 409 once decided or expired."""
    approval = decide_and_resume(db, enqueue, user.id, approval_id, approve=body.decision == "approve",
                                 scope=body.scope)
    return ApprovalPublic.of(approval)


def decide_and_resume(db: Database, enqueue: Enqueue, user_id: str, approval_id: str, *, approve: bool,
                      scope: str) -> Approval:
    """The one rule for a human's answer (the API and the console): record it, send the parked turn on,
    then 409 when it was already decided or had expired (the turn still resumes, to refuse the command)."""
    decided = approvals.decide(db, user_id, approval_id, approve=approve, scope=scope)
    if decided.resume is not None:
        resume(enqueue, decided.resume, decided.approval.id)
    if decided.conflict:
        approvals.raise_conflict(decided.conflict)
    return decided.approval


def resume(enqueue: Enqueue, turn: Turn, approval_id: str) -> None:
    """Send the parked turn on (an approval's or a question's); a broker failure is left to the sweeper."""
    try:
        enqueue(RESUME_TURN, ResumeTurn(turn_id=turn.id, session_id=turn.session_id, approval_id=approval_id))
    except Exception as exc:  # any broker failure: the row says sent, the sweeper re-sends it
        log.warning("could not enqueue resume of turn %s (%s); the sweeper will re-send it", turn.id,
                    type(exc).__name__)
