"""Every error the api answers, in one of two shapes: ours, or OpenAI's on the OpenAI-compatible routes.

Ours:   {"error": {"code": "<stable_code>", "message": "…"}}
OpenAI: {"error": {"message": "…", "type": "…", "param": …, "code": "…"}}
"""

from __future__ import annotations

import logging

import redis
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.errors import HermesError

log = logging.getLogger(__name__)

OPENAI_PATHS = frozenset({"/v1/chat/completions", "/v1/models"})

HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "rate_limited",
    503: "service_unavailable",
}
HTTP_MESSAGES = {404: "No such route.", 405: "This method is not allowed on this route."}

OPENAI_TYPES = {401: "invalid_request_error", 403: "permission_error", 429: "rate_limit_error"}


def is_openai_path(path: str) -> bool:
    return path in OPENAI_PATHS


def error_response(
    path: str,
    status: int,
    code: str,
    message: str,
    *,
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """The error body for this path: OpenAI's shape on the OpenAI routes, ours elsewhere."""
    headers = dict(headers or {})
    if status == 401:
        headers.setdefault("WWW-Authenticate", "Bearer")
    if not is_openai_path(path):
        return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)
    if status == 401:
        code, message = "invalid_api_key", "Invalid API key"
    kind = OPENAI_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return JSONResponse(body, status_code=status, headers=headers)


def _field_name(loc: tuple) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "header", "path")]
    return ".".join(parts) or "body"


async def _hermes_error(request: Request, exc: HermesError) -> JSONResponse:
    return error_response(request.url.path, exc.status_code, exc.code, exc.message, headers=retry_after(exc))


def retry_after(exc: HermesError) -> dict[str, str] | None:
    """The Retry-After header a refusal names (a rate limit's wait), if any."""
    wait = getattr(exc, "retry_after", None)
    return {"Retry-After": str(wait)} if wait else None


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    path = request.url.path
    if any(e.get("type") == "json_invalid" for e in errors):
        return error_response(path, 400, "malformed_json", "The request body is not valid JSON.")
    if errors and tuple(errors[0].get("loc", ())) == ("body",) and "json" not in request.headers.get("content-type", ""):
        message = "The request body must be JSON, sent with Content-Type: application/json."
        return error_response(path, 400 if is_openai_path(path) else 422, "invalid_request", message, param="body")
    described = [f"{_field_name(tuple(e.get('loc', ())))}: {e.get('msg', 'invalid')}" for e in errors[:5]]
    param = _field_name(tuple(errors[0].get("loc", ()))) if errors else None
    status = 400 if is_openai_path(path) else 422
    return error_response(path, status, "invalid_request", "; ".join(described), param=param)


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    status = exc.status_code
    code = HTTP_CODES.get(status, "internal_error" if status >= 500 else "bad_request")
    message = HTTP_MESSAGES.get(status) or (exc.detail if isinstance(exc.detail, str) else code)
    return error_response(request.url.path, status, code, message, headers=exc.headers)


async def _redis_down(request: Request, exc: redis.RedisError) -> JSONResponse:
    log.warning("redis unavailable on %s: %s", request.url.path, type(exc).__name__)
    return error_response(request.url.path, 503, "service_unavailable", "Redis is unavailable; try again.")


async def _database_down(request: Request, exc: OperationalError) -> JSONResponse:
    log.warning("database unavailable on %s: %s", request.url.path, type(exc).__name__)
    return error_response(request.url.path, 503, "service_unavailable", "The database is unavailable; try again.")


def install_error_handlers(app: FastAPI) -> None:
    """Map every known failure to its status and stable code."""
    app.add_exception_handler(HermesError, _hermes_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(redis.RedisError, _redis_down)
    app.add_exception_handler(OperationalError, _database_down)


class CatchAll:
    """Answer 500 internal_error for anything unexpected: traceback to the log, never to the client."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            response = error_response(scope.get("path", ""), 500, "internal_error", "Internal server error.")
            await response(scope, receive, send)
