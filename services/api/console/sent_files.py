"""Files the agent sent from a chat (send_file), for the signed-in user to download from the console.

The list and each file answer 404 for another user's chat or a file not sent in this chat, like the API. A file
is always served as a download (`Content-Disposition: attachment`, `nosniff`, its type judged from its content
when it was sent), so nothing the agent wrote can run as a page of the console.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse

from services.api.console.deps import ConsoleUser
from services.api.console.render import render
from shared.errors import NotFound
from shared.media.inbox import workspace_of
from shared.security.paths import resolve_inside
from shared.stores import sent_files, sessions

router = APIRouter(include_in_schema=False)


@router.get("/chat/{session_id}/sent")
def sent_list(request: Request, session_id: str, user: ConsoleUser):
    db = request.app.state.db
    chat = sessions.get_session(db, user.id, session_id)
    return render(request, "sent_files.html", active="chat", chat=chat,
                  files=sent_files.sent_in_session(db, user.id, chat.id))


@router.get("/chat/{session_id}/sent/{attachment_id}")
def sent_file(request: Request, session_id: str, attachment_id: str, user: ConsoleUser) -> FileResponse:
    db, settings = request.app.state.db, request.app.state.settings
    chat = sessions.get_session(db, user.id, session_id)
    found = next((a for a, _item in sent_files.sent_in_session(db, user.id, chat.id) if a.id == attachment_id), None)
    gone = NotFound("No such file in this chat (or it is no longer in the workspace).", code="attachment_not_found")
    if found is None:
        raise gone
    try:
        path = resolve_inside(workspace_of(settings, user.id), found.path)
    except Exception:
        raise gone from None
    if not path.is_file():
        raise gone
    headers = {"Content-Disposition": f"attachment; filename*=UTF-8''{quote(found.filename)}",
               "X-Content-Type-Options": "nosniff", "Cache-Control": "private, no-store"}
    return FileResponse(path, media_type=found.mime, headers=headers)
