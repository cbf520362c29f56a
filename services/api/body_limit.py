"""Refuse request bodies over their limit (MAX_INPUT_BYTES; uploads MEDIA_MAX_BYTES) before they are buffered (pure ASGI)."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.api.errors import error_response
from services.api.uploads import body_limit
from shared.config import Settings

TOO_LARGE = "The request body is larger than {limit} bytes."


class BodyTooLarge(HTTPException):
    """Raised from `receive` when a streamed body passes the limit; FastAPI re-raises HTTPExceptions."""

    def __init__(self, limit: int) -> None:
        super().__init__(status_code=413, detail=TOO_LARGE.format(limit=limit))


class BodyLimit:
    """413 payload_too_large by Content-Length when declared, else by counting the chunks as they arrive."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = body_limit(self.settings, scope)
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await self._refuse(scope, receive, send, limit)
            return
        seen = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if started:
                raise
            await self._refuse(scope, receive, send, limit)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        message = TOO_LARGE.format(limit=limit)
        response = error_response(scope.get("path", ""), 413, "payload_too_large", message)
        await response(scope, receive, send)


def _content_length(scope: Scope) -> int | None:
    value = Headers(scope=scope).get("content-length")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
