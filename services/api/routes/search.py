"""Full-text search over the calling user's stored messages."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from services.api.deps import CurrentUser, DbDep
from services.api.schemas import error_responses
from shared.models.search import SearchHitPublic, SearchResults
from shared.stores import sessions
from shared.search.engine import search_messages
from shared.search.query import MAX_QUERY_CHARS

router = APIRouter(prefix="/v1/search", tags=["search"], responses=error_responses(401, 422))


@router.get("", response_model=SearchResults, responses=error_responses(404))
def search(
    db: DbDep,
    user: CurrentUser,
    q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS,
                            description='Words or a question; "phrase", prefix*, AND, OR, NOT are honoured.')],
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
    session_id: Annotated[str | None, Query(max_length=64, description="Only this session of yours.")] = None,
    role: Annotated[Literal["user", "assistant"] | None, Query(description="Only this role.")] = None,
    sort: Annotated[Literal["rank", "newest", "oldest"], Query(description="rank: best first; newest/oldest: every match by time, then the limit.")] = "rank",
) -> SearchResults:
    """Your messages best matching `q`, best first; another user's never appear."""
    if session_id is not None:
        sessions.get_session(db, user.id, session_id)
    hits = search_messages(db, user.id, q, limit=limit, session_id=session_id, role=role, sort=sort)
    return SearchResults(query=q, data=[SearchHitPublic.model_validate(h, from_attributes=True) for h in hits])
