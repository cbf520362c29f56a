"""The calling user's memory: read both stores, edit them with the tool's rules, decide staged writes.

Writes made here are a person's own edits, so they apply at once even under MEMORY_WRITE_APPROVAL;
that setting stages the agent's writes, which `/v1/memory/pending` lists and decides.
"""

from __future__ import annotations

from fastapi import APIRouter

from services.api.deps import CurrentUser, DbDep, SettingsDep
from services.api.schemas import error_responses
from shared.errors import BadRequest, Conflict, InvalidInput
from shared.models.memory import (
    MemoryStagedWrite,
    MemoryView,
    MemoryWriteBody,
    MemoryWriteResult,
    StagedDecision,
    StagedDecisionBody,
    StagedWriteList,
    StagedWritePublic,
)
from shared.stores import memory_staged
from shared.stores.memory import MemoryRequest, MemoryStore, WriteResult

router = APIRouter(prefix="/v1/memory", tags=["memory"], responses=error_responses(401, 422))

# A request the rules cannot read is 400, content refused by the threat scan 422, a clash with the
# store's current state (full, no match, ambiguous, hand-edited file) 409.
ERRORS = {"memory_invalid": BadRequest, "memory_blocked": InvalidInput}


def _raise(result: WriteResult) -> None:
    raise ERRORS.get(result.code, Conflict)(result.message, code=result.code)


def _written(result: WriteResult) -> MemoryWriteResult:
    if not result.ok:
        _raise(result)
    return MemoryWriteResult.model_validate(result.payload)


def _public(row: MemoryStagedWrite) -> StagedWritePublic:
    return StagedWritePublic.model_validate(row, from_attributes=True)


@router.get("", response_model=MemoryView)
def read_memory(user: CurrentUser, settings: SettingsDep) -> MemoryView:
    """Both stores as they are now: entries, usage and limits."""
    store = MemoryStore.for_user(settings, user.id)
    return MemoryView(memory=store.view("memory"), user=store.view("user"),
                      write_approval=settings.memory_write_approval)


@router.post("", response_model=MemoryWriteResult, responses=error_responses(400, 409))
def write_memory(body: MemoryWriteBody, user: CurrentUser, settings: SettingsDep) -> MemoryWriteResult:
    """One action or a batch of `operations`, under the memory tool's rules and messages."""
    request = MemoryRequest.from_args(body.model_dump(exclude_none=True))
    return _written(MemoryStore.for_user(settings, user.id).write(request))


@router.get("/pending", response_model=StagedWriteList)
def list_pending(db: DbDep, user: CurrentUser) -> StagedWriteList:
    """The agent's writes waiting for a decision, oldest first."""
    return StagedWriteList(data=[_public(row) for row in memory_staged.list_pending(db, user.id)])


@router.post("/pending/{staged_id}", response_model=StagedDecision, responses=error_responses(400, 404, 409))
def decide_pending(staged_id: str, body: StagedDecisionBody, db: DbDep, user: CurrentUser,
                   settings: SettingsDep) -> StagedDecision:
    """Approve (the write is applied now, under the rules of now) or deny; 409 once decided or expired."""
    row, result = memory_staged.decide(db, settings, user.id, staged_id, approve=body.decision == "approve")
    written = _written(result) if result is not None else None
    return StagedDecision(staged=_public(row), result=written)
