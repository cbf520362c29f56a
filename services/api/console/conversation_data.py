"""A chat's own data from the console: download it (Markdown, HTML or JSON) or delete it everywhere.

Both go through the same code as the API: `shared.backups.exports` renders the download, and the delete is
`services.api.forgetting`, the path of `DELETE /v1/sessions/{id}` (another user's chat is 404 for both).
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request

from services.api import forgetting
from services.api.console.deps import ConsoleForm, ConsoleUser, redirect
from services.api.routes.session_data import download, providers
from shared.messaging.connections import get_redis
from shared.stores import sessions

router = APIRouter(include_in_schema=False)


@router.get("/chat/{session_id}/download")
def download_chat(request: Request, session_id: str, user: ConsoleUser,
                  format: Annotated[Literal["json", "md", "html"], Query()] = "md"):
    db = request.app.state.db
    return download(db, sessions.get_session(db, user.id, session_id), format)


@router.post("/chat/{session_id}/delete")
def delete_chat(request: Request, session_id: str, user: ConsoleUser, form: ConsoleForm):
    state = request.app.state
    chat = sessions.get_session(state.db, user.id, session_id)
    if form.get("confirm") != "yes":
        return redirect(request, f"/chat/{chat.id}", "Tick the box to confirm the deletion first.", "alert")
    forgetting.forget_session(state.db, get_redis(state.settings), state.settings, providers(request), user.id, chat.id)
    return redirect(request, "/chat", f"Deleted “{chat.title or 'Untitled chat'}”. {forgetting.KEPT_NOTE}")
