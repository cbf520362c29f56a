"""Background reviews: the per-session counters that make one due, each review run, and its tool-call ledger.

A review is persisted (status `queued`) before its task is sent. Its own messages (what the fork's
model said and what its tools returned) live on the review row, never in the session's transcript.
Each tool call is written to the ledger under (review_id, call_index) before it runs and again with
its result, so a review redelivered after its worker died never runs one call twice.
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Column, Index, Text
from sqlmodel import Field, SQLModel

from shared.models.base import created_at_field, json_field, time_field


# The tools whose calls change what the agent knows; the record lists these (reads stay in the ledger).
WRITE_TOOLS = ("memory", "skill_manage")


class ReviewTrigger(str, Enum):
    memory = "memory"
    skill = "skill"
    both = "both"


class ReviewStatus(str, Enum):
    queued = "queued"
    running = "running"
    completed = "completed"
    failed = "failed"


class CallOutcome(str, Enum):
    started = "started"  # written before the call ran; left so only when its worker died mid-call
    applied = "applied"  # a write that changed memory or a skill
    staged = "staged"  # a memory write kept for approval (MEMORY_WRITE_APPROVAL)
    refused = "refused"  # the tool or a rule said no; nothing changed
    interrupted = "interrupted"  # its worker died mid-call: the effect is unknown and it is never re-run
    done = "done"  # a read (skills_list, skill_view)


class ReviewCounter(SQLModel, table=True):
    """How far a session is from its next memory and skill review."""

    __tablename__ = "review_counters"

    session_id: str = Field(foreign_key="sessions.id", primary_key=True, max_length=40)
    turns_since_memory: int = Field(default=0)
    iterations_since_skill: int = Field(default=0)
    last_turn_seq: int = Field(default=0)  # the newest turn counted, so a turn is never counted twice
    updated_at: datetime = created_at_field()


class Review(SQLModel, table=True):
    __tablename__ = "reviews"
    __table_args__ = (Index("ix_reviews_session_status", "session_id", "status"),)

    id: str = Field(primary_key=True, max_length=40)
    session_id: str = Field(foreign_key="sessions.id", max_length=40)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    turn_id: str = Field(foreign_key="turns.id", max_length=40)
    trigger: str = Field(max_length=16)
    status: str = Field(default=ReviewStatus.queued.value, max_length=16)
    through_message_id: int = Field()  # the triggering turn's answer: the end of the conversation reviewed
    compaction_id: int | None = Field(default=None)  # the compaction that shaped that conversation, if any
    system_prompt: str = Field(sa_column=Column(Text, nullable=False))
    messages: list[dict[str, Any]] = json_field(list)
    summary: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    model_calls: int = Field(default=0)
    prompt_tokens: int = Field(default=0)
    cached_tokens: int = Field(default=0, sa_column_kwargs={"server_default": "0"})  # of prompt_tokens, cache reads
    completion_tokens: int = Field(default=0)
    attempts: int = Field(default=0)
    worker_id: str | None = Field(default=None, max_length=128)
    error_code: str | None = Field(default=None, max_length=64)
    error_message: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = created_at_field()
    enqueued_at: datetime | None = time_field()
    started_at: datetime | None = time_field()
    heartbeat_at: datetime | None = time_field()
    finished_at: datetime | None = time_field()


class ReviewCall(SQLModel, table=True):
    """One tool call of a review, in call order."""

    __tablename__ = "review_calls"

    review_id: str = Field(foreign_key="reviews.id", primary_key=True, max_length=40)
    call_index: int = Field(primary_key=True)
    tool_call_id: str = Field(max_length=128)
    name: str = Field(max_length=128)
    arguments: str = Field(sa_column=Column(Text, nullable=False))
    outcome: str = Field(default=CallOutcome.started.value, max_length=16)
    result: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = created_at_field()
    finished_at: datetime | None = time_field()


class ReviewWritePublic(BaseModel):
    """One memory or skill write a review made (or staged, or was refused), with the tool's answer."""

    index: int
    tool: str
    arguments: Any
    outcome: CallOutcome
    result: Any
    created_at: datetime
    finished_at: datetime | None

    @classmethod
    def of(cls, call: ReviewCall) -> "ReviewWritePublic":
        return cls(index=call.call_index, tool=call.name, arguments=_parsed(call.arguments),
                   outcome=CallOutcome(call.outcome), result=_parsed(call.result), created_at=call.created_at,
                   finished_at=call.finished_at)


def _parsed(text: str | None) -> Any:
    """JSON text as its value; anything else (a model's broken arguments) as the text itself."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


class ReviewPublic(BaseModel):
    id: str
    session_id: str
    turn_id: str
    trigger: ReviewTrigger
    status: ReviewStatus
    summary: str | None
    model_calls: int
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    attempts: int
    error: dict[str, str] | None
    writes: list[ReviewWritePublic]
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def of(cls, review: Review, calls: list[ReviewCall]) -> "ReviewPublic":
        error = {"code": review.error_code, "message": review.error_message or ""} if review.error_code else None
        writes = [ReviewWritePublic.of(c) for c in calls if c.name in WRITE_TOOLS]
        return cls(id=review.id, session_id=review.session_id, turn_id=review.turn_id,
                   trigger=ReviewTrigger(review.trigger), status=ReviewStatus(review.status), summary=review.summary,
                   model_calls=review.model_calls, prompt_tokens=review.prompt_tokens,
                   cached_tokens=review.cached_tokens, completion_tokens=review.completion_tokens, attempts=review.attempts, error=error, writes=writes,
                   created_at=review.created_at, started_at=review.started_at, finished_at=review.finished_at)


class ReviewList(BaseModel):
    data: list[ReviewPublic]
