"""Console request dependencies, as Annotated aliases the page routes declare.

- `ConsoleUser`: the signed-in user. No live session → 303 to `/signin?next=<path>` (an unknown, expired or
  signed-out session id, or a revoked key, counts as signed out: the key is re-checked on every request
  through the API's own lookup, auth cache included).
- `ConsoleOwner`: the session was opened with the admin key; otherwise 404, as for any page that is not there.
- `ConsoleForm`: the POSTed urlencoded form as a dict, after its `csrf_token` was found to be the session's
  (403 page otherwise) and its text storable (422 page for a NUL or a lone surrogate, as the API's
  TextGuard). Every state-changing console route is a POST taking ConsoleForm; sign-in takes SignInForm.
- `redirect(request, url, text=None, role="status")`: the POST-redirect-GET answer (303), carrying an
  optional one-shot flash message the next page shows in `<p role="status">` or `<p role="alert">`.

The owner signs in with the admin key in the "API key" field (owner pages only), or with their own user
key in "API key" and the admin key in the optional "Admin key" field (both views).
"""

from __future__ import annotations

import secrets
from typing import Annotated, Callable
from urllib.parse import parse_qsl, urlsplit

import redis
from fastapi import Depends, Request
from fastapi.responses import RedirectResponse

from services.api.console import session as cookies
from services.api.console import session_store
from services.api.console.errors import ConsoleRefusal, SignInRequired
from services.api.deps import user_for_digest
from services.api.text_guard import bad_text
from shared.errors import NotFound, Unavailable
from shared.models.users import User
from shared.stores import users

SIGNED_OUT = "You were signed out: sign in again."
EXPIRED_FORM = "This form expired or did not come from this console. Reload the page and try again."


async def load_session(request: Request) -> bool:
    """Check the session once per request and keep it, its user and owner flag on request.state for render().

    False when there is no live session; a key that no longer opens anything (revoked, or the admin key
    changed) ends the whole session in Redis.
    """
    if hasattr(request.state, "console_valid"):
        return request.state.console_valid
    request.state.console_session, request.state.console_user, request.state.console_is_owner = None, None, False
    state = request.app.state
    try:
        session = await session_store.load(state.redis, state.settings.broker_key_prefix,
                                           request.cookies.get(cookies.SESSION_COOKIE))
    except redis.RedisError as exc:
        raise Unavailable("Console sessions are unavailable (Redis); try again.") from exc
    valid = session is not None
    if session is not None and session.key_digest:
        request.state.console_user = await user_for_digest(request, session.key_digest)
        valid = request.state.console_user is not None
    if valid and session is not None and session.admin_digest:
        valid = request.state.console_is_owner = _is_admin_digest(request, session.admin_digest)
    if valid:
        request.state.console_session = session
    else:
        request.state.console_user, request.state.console_is_owner = None, False
        if session is not None:
            await session_store.delete(state.redis, state.settings.broker_key_prefix, session.id)
    request.state.console_valid = valid
    return valid


def _is_admin_digest(request: Request, digest: str) -> bool:
    """The session was opened with today's admin key (changing ADMIN_API_KEY ends owner sessions)."""
    admin = request.app.state.settings.admin_api_key
    expected = users.hash_key(admin.get_secret_value()) if admin and admin.get_secret_value() else ""
    return bool(expected) and secrets.compare_digest(digest.encode(), expected.encode())


def _here(request: Request) -> str:
    return request.url.path + (f"?{request.url.query}" if request.url.query else "")


async def console_user(request: Request) -> User:
    had_cookie = bool(request.cookies.get(cookies.SESSION_COOKIE))
    if not await load_session(request):
        raise SignInRequired(_here(request), SIGNED_OUT if had_cookie else None)
    if request.state.console_user is None:
        raise SignInRequired(_here(request), "This page needs a user's API key: sign in with one.")
    return request.state.console_user


async def console_owner(request: Request) -> None:
    if not await load_session(request) or not request.state.console_is_owner:
        raise NotFound("There is no such page.")


def _same_origin(request: Request) -> bool:
    """A browser's Origin (when it sends one) names this host: a second line behind the token."""
    origin = request.headers.get("origin")
    if not origin or origin == "null":
        return origin is None
    return urlsplit(origin).netloc == request.headers.get("host", "")


async def _form(request: Request) -> dict[str, str]:
    body = (await request.body()).decode("utf-8", errors="replace")
    # Browsers send every line break of a form as CRLF; the stores keep (and match) plain LF.
    return {name: value.replace("\r\n", "\n") for name, value in parse_qsl(body, keep_blank_values=True)}


def _storable(form: dict[str, str]) -> dict[str, str]:
    for name, value in form.items():
        reason = bad_text(value) or bad_text(name)
        if reason:
            raise ConsoleRefusal(422, f"The field {name[:40]!r} holds {reason}, which cannot be stored.")
    return form


async def _checked_form(request: Request, token_ok: Callable[[Request, str | None], bool]) -> dict[str, str]:
    form = await _form(request)
    await load_session(request)
    if not _same_origin(request) or not token_ok(request, form.pop(cookies.CSRF_FIELD, None)):
        raise ConsoleRefusal(403, EXPIRED_FORM)
    return _storable(form)


async def check_form_token(request: Request, token: str | None) -> None:
    """A streamed form's token (the upload form reads its own body): the session's, from this origin, or 403."""
    await load_session(request)
    if not _same_origin(request) or not cookies.csrf_ok(request, token):
        raise ConsoleRefusal(403, EXPIRED_FORM)


async def console_form(request: Request) -> dict[str, str]:
    """A signed-in page's form: its token must be the one stored in this browser's session."""
    return await _checked_form(request, cookies.csrf_ok)


async def signin_form(request: Request) -> dict[str, str]:
    """The sign-in form: no session to bind to yet, so its token is bound to the sign-in nonce cookie."""
    return await _checked_form(request, cookies.signin_csrf_ok)


def redirect(request: Request, url: str, text: str | None = None, role: str = "status") -> RedirectResponse:
    """303 to `url`, with an optional message for the next page."""
    response = RedirectResponse(url, status_code=303)
    if text:
        cookies.set_flash(request, response, cookies.Flash(text, role))
    return response


ConsoleUser = Annotated[User, Depends(console_user)]
ConsoleOwner = Annotated[None, Depends(console_owner)]
ConsoleForm = Annotated[dict[str, str], Depends(console_form)]
SignInForm = Annotated[dict[str, str], Depends(signin_form)]
