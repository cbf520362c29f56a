"""A user's data: forget a session everywhere it is kept, take one away as JSON, Markdown or HTML."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel

from services.api import forgetting
from services.api.deps import CurrentUser, DbDep, RedisDep, SettingsDep
from services.api.schemas import error_responses
from shared.backups import exports
from shared.providers import ProviderManager, build_manager
from shared.stores import sessions

router = APIRouter(prefix="/v1/sessions", tags=["sessions"], responses=error_responses(401, 422))


class SessionForgotten(BaseModel):
    """What `DELETE /v1/sessions/{id}` removed, and what it left on purpose."""

    id: str
    deleted: bool = True
    messages: int
    turns: int
    kept: str = forgetting.KEPT_NOTE


def providers(request: Request) -> ProviderManager:
    """The api process's memory provider manager, built on first use (it hears the end of deleted sessions)."""
    state = request.app.state
    if getattr(state, "providers", None) is None:
        state.providers = build_manager(state.settings)
    return state.providers


@router.delete("/{session_id}", response_model=SessionForgotten, responses=error_responses(404))
def delete_session(session_id: str, request: Request, db: DbDep, r: RedisDep, settings: SettingsDep,
                   user: CurrentUser) -> SessionForgotten:
    """Forget the session: its turns stop, its messages, index rows, approvals, streams and outputs go."""
    forgotten = forgetting.forget_session(db, r, settings, providers(request), user.id, session_id)
    return SessionForgotten(id=session_id, messages=forgotten.rows.get("messages", 0),
                            turns=forgotten.rows.get("turns", 0))


@router.get("/{session_id}/export", responses=error_responses(404))
def export_session(session_id: str, db: DbDep, user: CurrentUser,
                   format: Annotated[Literal["json", "md", "html"], Query()] = "json") -> Response:
    """The whole transcript as a download: `json`, `md` (Markdown) or `html` (a page that needs nothing else)."""
    return download(db, sessions.get_session(db, user.id, session_id), format)


def download(db, session, fmt: str) -> Response:
    """The session's transcript in `fmt` as an attachment named after the session."""
    body = exports.render(exports.transcript(db, session), fmt)
    return Response(body, media_type=exports.FORMATS[fmt],
                    headers={"Content-Disposition": f'attachment; filename="{session.id}.{fmt}"'})
