"""Attachments: upload a file into a session (streamed to the workspace inbox), read its metadata and bytes.

Every answer about another user's session or attachment is 404, the same as for one that does not exist.
The bytes are served with `X-Content-Type-Options: nosniff` and as a download unless they are an image
(whose type was judged from its content), so a stored file can never run as a page of the console.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated
from urllib.parse import quote, unquote

from fastapi import APIRouter, Header, Request
from fastapi.responses import FileResponse
from starlette.concurrency import run_in_threadpool

from services.api.deps import CurrentUser, DbDep, SettingsDep
from services.api.schemas import error_responses
from shared.config import Settings
from shared.db import Database
from shared.errors import NotFound
from shared.media.inbox import InboxFile, workspace_of
from shared.models.attachments import AttachmentPublic, AttachmentSaved
from shared.security.paths import resolve_inside
from shared.stores import attachments, sessions

router = APIRouter(tags=["attachments"], responses=error_responses(401, 404))
MAX_HEADER_NAME = 4096


UPLOAD_BODY = {"requestBody": {"required": True, "content": {
    "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}}


@router.post("/v1/sessions/{session_id}/attachments", status_code=201, response_model=AttachmentSaved,
             responses=error_responses(413, 415, 422), openapi_extra=UPLOAD_BODY)
async def upload(session_id: str, request: Request, db: DbDep, settings: SettingsDep, user: CurrentUser,
                 x_filename: Annotated[str | None, Header()] = None) -> AttachmentSaved:
    """Stream the raw body into `inbox/<date>/` of the caller's workspace; the name comes from X-Filename
    (percent-encoded UTF-8 allowed), the type from the content."""
    await run_in_threadpool(sessions.get_session, db, user.id, session_id)
    inbox = InboxFile(settings, user.id, unquote((x_filename or "")[:MAX_HEADER_NAME]))
    try:
        async for chunk in request.stream():
            await run_in_threadpool(inbox.write, chunk)
        saved = await run_in_threadpool(inbox.finish)
    except BaseException:
        inbox.abort()
        raise
    row = await run_in_threadpool(attachments.add_attachment, db, user_id=user.id, session_id=session_id,
                                  **asdict(saved))
    return AttachmentSaved.of(row)


@router.get("/v1/attachments/{attachment_id}", response_model=AttachmentPublic)
async def read_attachment(attachment_id: str, db: DbDep, user: CurrentUser) -> AttachmentPublic:
    """An attachment's metadata (its transcript once a voice note was heard)."""
    return AttachmentPublic.of(await run_in_threadpool(attachments.get_attachment, db, user.id, attachment_id))


@router.get("/v1/attachments/{attachment_id}/content", response_class=FileResponse)
async def attachment_content(attachment_id: str, db: DbDep, settings: SettingsDep, user: CurrentUser) -> FileResponse:
    """The stored bytes, to their owner only; a file the agent has since removed is 404."""
    return await file_response(db, settings, user.id, attachment_id)


async def file_response(db: Database, settings: Settings, user_id: str, attachment_id: str) -> FileResponse:
    """The attachment's bytes for its owner (the console serves them the same way); 404 for anyone else."""
    row = await run_in_threadpool(attachments.get_attachment, db, user_id, attachment_id)
    try:
        path = resolve_inside(workspace_of(settings, user_id), row.path)
    except Exception:
        raise NotFound("The attachment's file is no longer in the workspace.", code="attachment_not_found") from None
    if not path.is_file():
        raise NotFound("The attachment's file is no longer in the workspace.", code="attachment_not_found")
    disposition = "inline" if row.kind == "image" else "attachment"
    headers = {"Content-Disposition": f"{disposition}; filename*=UTF-8''{quote(row.filename)}",
               "X-Content-Type-Options": "nosniff", "Cache-Control": "private, no-store"}
    return FileResponse(path, media_type=row.mime, headers=headers)
