"""The console's cookies: the signed session, the CSRF nonce and the one-shot flash message.

- `hstack_session`: HttpOnly, SameSite=Strict, signed (see signing.py), Secure on https. It carries the
  user's API key (`k`) and/or the admin key (`a`) and expires after CONSOLE_SESSION_HOURS. The keys are
  re-checked on every request through the same path the API uses, so a revoked key signs the page out.
- `hstack_csrf`: a random nonce; every form carries HMAC(secret, nonce) as `csrf_token`. A cross-site page
  can neither read the nonce nor forge the token, and SameSite=Strict keeps the session off its requests.
- `hstack_flash`: a signed message shown once by the next page (see `redirect`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie

from fastapi import Request
from starlette.responses import Response

from services.api.console import signing
from services.api.console.secret import console_secret

SESSION_COOKIE = "hstack_session"
CSRF_COOKIE = "hstack_csrf"
FLASH_COOKIE = "hstack_flash"
CSRF_FIELD = "csrf_token"
FLASH_SECONDS = 60
CSRF_SECONDS = 30 * 24 * 3600


@dataclass(frozen=True)
class ConsoleSession:
    """What a valid session cookie says: the user's key and/or the admin key (either may be empty)."""

    user_key: str = ""
    admin_key: str = ""


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


def read_session(request: Request) -> ConsoleSession | None:
    """The session the cookie carries, or None when it is missing, tampered with or expired."""
    data = signing.unsign(secret_for(request), "session", request.cookies.get(SESSION_COOKIE))
    if data is None:
        return None
    user_key, admin_key = data.get("k"), data.get("a")
    if not isinstance(user_key, str) or not isinstance(admin_key, str) or not (user_key or admin_key):
        return None
    return ConsoleSession(user_key=user_key, admin_key=admin_key)


def key_of_cookie(secret: bytes, cookie_header: str) -> str | None:
    """The key a verified session cookie in a raw Cookie header carries (the rate limiter counts the console
    against the same key as the API); None without a valid one, so a forged cookie buys no fresh bucket."""
    jar = SimpleCookie()
    try:
        jar.load(cookie_header)
    except CookieError:
        return None
    morsel = jar.get(SESSION_COOKIE)
    data = signing.unsign(secret, "session", morsel.value if morsel else None)
    return (data.get("k") or data.get("a") or None) if data else None


def start_session(request: Request, response: Response, session: ConsoleSession) -> None:
    hours = request.app.state.settings.console_session_hours
    value = signing.sign(secret_for(request), "session", {"k": session.user_key, "a": session.admin_key},
                         hours * 3600)
    response.set_cookie(SESSION_COOKIE, value, max_age=int(hours * 3600), **_cookie_options(request))


def end_session(request: Request, response: Response) -> None:
    response.delete_cookie(SESSION_COOKIE, **_cookie_options(request))


def csrf_nonce(request: Request) -> str:
    """This browser's nonce: from its cookie, or a new one `keep_csrf_nonce` will set on the response."""
    nonce = getattr(request.state, "csrf_nonce", None) or request.cookies.get(CSRF_COOKIE)
    if not nonce:
        nonce = request.state.csrf_nonce = secrets.token_urlsafe(24)
    return nonce


def csrf_token(request: Request) -> str:
    return signing.mac(secret_for(request), "csrf", csrf_nonce(request))


def keep_csrf_nonce(request: Request, response: Response) -> None:
    """Set the nonce cookie when this request minted it."""
    if getattr(request.state, "csrf_nonce", None) and request.cookies.get(CSRF_COOKIE) != request.state.csrf_nonce:
        response.set_cookie(CSRF_COOKIE, request.state.csrf_nonce, max_age=CSRF_SECONDS, **_cookie_options(request))


def csrf_ok(request: Request, presented: str | None) -> bool:
    """The form's token matches this browser's nonce cookie (constant-time)."""
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
