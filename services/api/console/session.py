"""The console's cookies: the session id, the sign-in form's CSRF nonce and the one-shot flash message.

- `hstack_session`: HttpOnly, SameSite=Strict, Secure on https. Only a random id: the session itself lives
  in Redis (session_store.py), so signing out ends every copy of the cookie.
- CSRF: every form of a signed-in page carries the token stored in its server-side session, so a cookie
  planted in the browser cannot forge one. The sign-in form has no session yet: its token is
  HMAC(secret, nonce) with the nonce in `hstack_csrf`, and a signed-in browser's session replaces it.
- `hstack_flash`: a signed message shown once by the next page (see `redirect`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from fastapi import Request
from starlette.responses import Response

from services.api.console import signing
from services.api.console import session_store
from services.api.console.secret import console_secret

SESSION_COOKIE = "hstack_session"
CSRF_COOKIE = "hstack_csrf"
FLASH_COOKIE = "hstack_flash"
CSRF_FIELD = "csrf_token"
FLASH_SECONDS = 60
CSRF_SECONDS = 30 * 24 * 3600


@dataclass(frozen=True)
class Flash:
    """One message for the next page: role "status" (it worked) or "alert" (refused, or an error)."""

    text: str
    role: str = "status"


def secret_for(request: Request) -> bytes:
    """The signing key, read once per process and kept on the app."""
    state = request.app.state
    if getattr(state, "console_secret", None) is None:
        state.console_secret = console_secret(state.settings)
    return state.console_secret


def _cookie_options(request: Request) -> dict:
    return {"httponly": True, "samesite": "strict", "secure": request.url.scheme == "https", "path": "/"}


def current(request: Request) -> session_store.ConsoleSession | None:
    """The session `load_session` found valid for this request, if any."""
    return getattr(request.state, "console_session", None)


async def start_session(request: Request, response: Response, *, key_digest: str = "", admin_digest: str = "") -> None:
    """A fresh session for this sign-in; whatever session id the browser offered is ended, never adopted."""
    state = request.app.state
    prefix, hours = state.settings.broker_key_prefix, state.settings.console_session_hours
    await session_store.delete(state.redis, prefix, request.cookies.get(SESSION_COOKIE))
    session = await session_store.create(state.redis, prefix, int(hours * 3600), key_digest=key_digest,
                                         admin_digest=admin_digest)
    response.set_cookie(SESSION_COOKIE, session.id, max_age=int(hours * 3600), **_cookie_options(request))


async def end_session(request: Request, response: Response) -> None:
    """Delete the session in Redis (every copy of the cookie stops working) and the browser's cookie."""
    state = request.app.state
    await session_store.delete(state.redis, state.settings.broker_key_prefix, request.cookies.get(SESSION_COOKIE))
    forget_session(request, response)


def forget_session(request: Request, response: Response) -> None:
    response.delete_cookie(SESSION_COOKIE, **_cookie_options(request))


def _signin_nonce(request: Request) -> str:
    """This browser's sign-in nonce: from its cookie, or a new one `keep_csrf_nonce` will set on the response."""
    nonce = getattr(request.state, "csrf_nonce", None) or request.cookies.get(CSRF_COOKIE)
    if not nonce:
        nonce = request.state.csrf_nonce = secrets.token_urlsafe(24)
    return nonce


def csrf_token(request: Request) -> str:
    """The token this page's forms carry: the session's, or before sign-in the nonce's."""
    session = current(request)
    if session is not None:
        return session.csrf
    return signing.mac(secret_for(request), "csrf", _signin_nonce(request))


def keep_csrf_nonce(request: Request, response: Response) -> None:
    """Set the nonce cookie when this request minted it."""
    if getattr(request.state, "csrf_nonce", None) and request.cookies.get(CSRF_COOKIE) != request.state.csrf_nonce:
        response.set_cookie(CSRF_COOKIE, request.state.csrf_nonce, max_age=CSRF_SECONDS, **_cookie_options(request))


def csrf_ok(request: Request, presented: str | None) -> bool:
    """The form's token is this request's session's (constant-time)."""
    session = current(request)
    return bool(session and presented) and secrets.compare_digest(presented.encode(), session.csrf.encode())


def signin_csrf_ok(request: Request, presented: str | None) -> bool:
    """The sign-in form's token: the session's when signed in, else the one bound to the nonce cookie."""
    if current(request) is not None:
        return csrf_ok(request, presented)
    nonce = request.cookies.get(CSRF_COOKIE)
    if not nonce or not presented:
        return False
    return secrets.compare_digest(presented.encode(), signing.mac(secret_for(request), "csrf", nonce).encode())


def set_flash(request: Request, response: Response, flash: Flash) -> None:
    value = signing.sign(secret_for(request), "flash", {"t": flash.text, "r": flash.role}, FLASH_SECONDS)
    response.set_cookie(FLASH_COOKIE, value, max_age=FLASH_SECONDS, **_cookie_options(request))


def take_flash(request: Request, response: Response) -> Flash | None:
    """The pending message, removed from the browser so it shows once."""
    raw = request.cookies.get(FLASH_COOKIE)
    if raw is None:
        return None
    response.delete_cookie(FLASH_COOKIE, **_cookie_options(request))
    data = signing.unsign(secret_for(request), "flash", raw)
    if data is None or not isinstance(data.get("t"), str):
        return None
    return Flash(data["t"], "alert" if data.get("r") == "alert" else "status")
