"""The chat page's upload form: one file (and an optional message) sent as a turn; stored files served back.

The form is multipart/form-data read as a stream (console/multipart.py): its CSRF token is checked before a
byte of the file is written, the file goes through the same inbox as the API's upload (typed by content,
size-capped, beneath the workspace), and the turn is accepted as a message from the chat box is. Files are
served to their owner only (another user's id is 404), images inline, everything else as a download.
"""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from services.api.accept import accept_turn
from services.api.console.actions import refused
from services.api.console.deps import ConsoleUser, check_form_token, redirect
from services.api.console.multipart import read_form
from services.api.console.session import CSRF_FIELD
from services.api.routes.attachments import file_response
from shared.errors import HermesError, InvalidInput
from shared.media.inbox import InboxFile
from shared.stores import attachments, sessions

router = APIRouter(include_in_schema=False)


@router.post("/chat/{session_id}/upload")
async def upload(request: Request, session_id: str, user: ConsoleUser):
    state = request.app.state
    await run_in_threadpool(sessions.get_session, state.db, user.id, session_id)
    inbox: list[InboxFile] = []

    async def on_file(fields: dict[str, str], filename: str):
        await check_form_token(request, fields.get(CSRF_FIELD))
        if inbox:
            raise InvalidInput("Send one file at a time.")
        inbox.append(InboxFile(state.settings, user.id, filename))

        async def write(data: bytes) -> None:
            await run_in_threadpool(inbox[0].write, data)
        return write

    try:
        fields = await read_form(request.stream(), request.headers.get("content-type", ""), on_file)
        await check_form_token(request, fields.get(CSRF_FIELD))
        if not inbox:
            return redirect(request, f"/chat/{session_id}", "Choose a file first.", "alert")
        saved = await run_in_threadpool(inbox[0].finish)
    except HermesError as exc:
        for item in inbox:
            item.abort()
        return refused(request, f"/chat/{session_id}", exc)
    except BaseException:
        for item in inbox:
            item.abort()
        raise
    return await run_in_threadpool(_send, request, user.id, session_id, fields.get("message", ""), saved)


def _send(request: Request, user_id: str, session_id: str, text: str, saved):
    state = request.app.state
    row = attachments.add_attachment(state.db, user_id=user_id, session_id=session_id, **asdict(saved))
    try:
        accept_turn(state.db, state.enqueue, state.settings, user_id=user_id, session_id=session_id, text=text,
                    attachment_ids=[row.id])
    except HermesError as exc:
        return refused(request, f"/chat/{session_id}", exc)
    return redirect(request, f"/chat/{session_id}#live", f"Sent {saved.filename}.")


@router.get("/chat/attachments/{attachment_id}")
async def attachment(request: Request, attachment_id: str, user: ConsoleUser):
    """A stored file for the signed-in owner (an <img> or a download link of the transcript)."""
    return await file_response(request.app.state.db, request.app.state.settings, user.id, attachment_id)
