"""Files the agent sent from a chat (send_file), listed for the signed-in user to download from the console.

Another user's chat is 404. Each file is served by the console's attachment route (console/uploads.py, the
API's `file_response`): to its owner only, `nosniff`, a download unless its content is an image, so nothing the
agent wrote can run as a page of the console.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from services.api.console.deps import ConsoleUser
from services.api.console.render import render
from shared.stores import sent_files, sessions

router = APIRouter(include_in_schema=False)


@router.get("/chat/{session_id}/sent")
def sent_list(request: Request, session_id: str, user: ConsoleUser):
    db = request.app.state.db
    chat = sessions.get_session(db, user.id, session_id)
    return render(request, "sent_files.html", active="chat", chat=chat,
                  files=sent_files.sent_in_session(db, user.id, chat.id))
