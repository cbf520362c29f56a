"""One payload model per task: only ids travel through the broker."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class RunTurn(BaseModel):
    """Drain a session starting with this turn."""

    model_config = ConfigDict(extra="forbid")

    turn_id: str
    session_id: str


class ResumeTurn(BaseModel):
    """Continue a parked turn from the tool call its approval or question settled (`approval_id` names either), then
    drain its session."""

    model_config = ConfigDict(extra="forbid")

    turn_id: str
    session_id: str
    approval_id: str


class ReviewSession(BaseModel):
    """Run the session's due background reviews, one at a time, starting with this one."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    review_id: str


class EmbedMessages(BaseModel):
    """Embed the session's messages that have no provider embedding yet (hybrid search, EMBEDDINGS_MODEL)."""

    model_config = ConfigDict(extra="forbid")

    session_id: str


class SweepTurns(BaseModel):
    """Re-send stuck turns."""

    model_config = ConfigDict(extra="forbid")


class CheckCuration(BaseModel):
    """Find the users whose curation pass is due and send one CurateSkills each."""

    model_config = ConfigDict(extra="forbid")


class CurateSkills(BaseModel):
    """Run one user's curation pass if it is still due."""

    model_config = ConfigDict(extra="forbid")

    user_id: str


class ConsolidateSkills(BaseModel):
    """Look for overlapping agent-made skills of one user and stage an umbrella per group (CURATOR_CONSOLIDATE)."""

    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(min_length=1, max_length=40)


class EndSession(BaseModel):
    """Mark the session ended and fire the memory provider's on_session_end, unless it already ended."""

    model_config = ConfigDict(extra="forbid")

    session_id: str


class SweepExpired(BaseModel):
    """Expire staged memory writes and give orphaned turn event streams their expiry."""

    model_config = ConfigDict(extra="forbid")


class TickCron(BaseModel):
    """Settle ended runs of scheduled jobs, then claim the due jobs and send their runs' turns."""

    model_config = ConfigDict(extra="forbid")


class ProbeMcpServer(BaseModel):
    """Connect to an MCP server and list its tools, recording its health (`hstack mcp test`); `user_id` None: the
    owner's server, started in a workspace of its own."""

    model_config = ConfigDict(extra="forbid")

    server: str
    user_id: str | None = None


class EvolveSkill(BaseModel):
    """Run one skill evolution (its row is committed first, status queued)."""

    model_config = ConfigDict(extra="forbid")

    run_id: str


class CheckEvolution(BaseModel):
    """The optional schedule: start runs for skills with enough evidence."""

    model_config = ConfigDict(extra="forbid")
