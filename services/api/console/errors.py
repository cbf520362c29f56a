"""Console failures answer HTML pages, not the API's JSON: the same statuses, a page a person can read.

`install` wraps the app's existing handlers: on console paths they render `error.html` (or redirect to
sign-in), everywhere else the API's handler answers as before.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from services.api.console import session as cookies
from services.api.console.paths import is_console_path
from services.api.console.render import render
from shared.errors import HermesError

TITLES = {400: "Bad request", 403: "Forbidden", 404: "Not found", 405: "Method not allowed",
          409: "Conflict", 413: "Too large", 422: "Not accepted", 429: "Too many requests",
          503: "Unavailable"}


class SignInRequired(Exception):
    """No valid session (missing, expired, tampered with, or its key was revoked): go to the sign-in page."""

    def __init__(self, next_path: str, message: str | None = None) -> None:
        super().__init__(message or "")
        self.next_path = next_path
        self.message = message


class ConsoleRefusal(Exception):
    """A console-only refusal with its status (403 for a bad CSRF token, 422 for unstorable text)."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message


def error_page(request: Request, status: int, message: str):
    return render(request, "error.html", status_code=status, title=TITLES.get(status, "Error"),
                  message=message)


async def _sign_in(request: Request, exc: SignInRequired):
    response = RedirectResponse(f"/signin?next={quote(exc.next_path, safe='/')}", status_code=303)
    if request.cookies.get(cookies.SESSION_COOKIE):
        cookies.forget_session(request, response)
    if exc.message:
        cookies.set_flash(request, response, cookies.Flash(exc.message, "alert"))
    return response


async def _refusal(request: Request, exc: ConsoleRefusal):
    return error_page(request, exc.status_code, exc.message)


def _wrap(app: FastAPI, kind: type, message_of) -> None:
    api_handler = app.exception_handlers[kind]

    async def handler(request: Request, exc):
        if not is_console_path(request.url.path):
            return await api_handler(request, exc)
        status, message = message_of(exc)
        return error_page(request, status, message)

    app.add_exception_handler(kind, handler)


def _http_message(exc: StarletteHTTPException) -> tuple[int, str]:
    if exc.status_code == 404:
        return 404, "There is no such page."
    return exc.status_code, exc.detail if isinstance(exc.detail, str) else TITLES.get(exc.status_code, "Error")


def install(app: FastAPI) -> None:
    """HTML error pages on console paths; the API's JSON errors elsewhere are untouched."""
    app.add_exception_handler(SignInRequired, _sign_in)
    app.add_exception_handler(ConsoleRefusal, _refusal)
    _wrap(app, HermesError, lambda exc: (exc.status_code, exc.message))
    _wrap(app, StarletteHTTPException, _http_message)
    _wrap(app, RequestValidationError, lambda exc: (422, "The form was incomplete or not valid."))
