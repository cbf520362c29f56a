"""Console request dependencies, as Annotated aliases the page routes declare.

- `ConsoleUser`: the signed-in user. No valid session → 303 to `/signin?next=<path>` (an expired or
  tampered cookie, or a revoked key, counts as signed out: the key is re-checked on every request through
  the API's own lookup, auth cache included).
- `ConsoleOwner`: the session holds the admin key; otherwise 404, as for any page that is not there.
- `ConsoleForm`: the POSTed urlencoded form as a dict, after its `csrf_token` was checked (403 page
  otherwise) and its text found storable (422 page for a NUL or a lone surrogate, as the API's TextGuard).
  Every state-changing console route is a POST taking ConsoleForm.
- `redirect(request, url, text=None, role="status")`: the POST-redirect-GET answer (303), carrying an
  optional one-shot flash message the next page shows in `<p role="status">` or `<p role="alert">`.

The owner signs in with the admin key in the "API key" field (owner pages only), or with their own user
key in "API key" and the admin key in the optional "Admin key" field (both views).
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qsl, urlsplit

from fastapi import Depends, Request
from fastapi.responses import RedirectResponse

from services.api.console import session as cookies
from services.api.console.errors import ConsoleRefusal, SignInRequired
from services.api.deps import matches_secret, user_for_key
from services.api.text_guard import bad_text
from shared.errors import NotFound
from shared.models.users import User

SIGNED_OUT = "You were signed out: sign in again."


async def load_session(request: Request) -> bool:
    """Check the session once per request and keep its user and owner flag on request.state for render().

    False when there is no valid session; a key that no longer opens anything fails the whole session.
    """
    if hasattr(request.state, "console_valid"):
        return request.state.console_valid
    request.state.console_user, request.state.console_is_owner = None, False
    session = cookies.read_session(request)
    valid = session is not None
    if session is not None and session.user_key:
        state = request.app.state
        request.state.console_user = await user_for_key(state.auth_cache, state.db, session.user_key)
        valid = request.state.console_user is not None
    if valid and session is not None and session.admin_key:
        valid = request.state.console_is_owner = matches_secret(session.admin_key, request.app.state.settings.admin_api_key)
    if not valid:
        request.state.console_user, request.state.console_is_owner = None, False
    request.state.console_valid = valid
    return valid


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


async def console_form(request: Request) -> dict[str, str]:
    body = (await request.body()).decode("utf-8", errors="replace")
    # Browsers send every line break of a form as CRLF; the stores keep (and match) plain LF.
    form = {name: value.replace("\r\n", "\n") for name, value in parse_qsl(body, keep_blank_values=True)}
    if not _same_origin(request) or not cookies.csrf_ok(request, form.pop(cookies.CSRF_FIELD, None)):
        raise ConsoleRefusal(403, "This form expired or did not come from this console. Reload the page and try again.")
    for name, value in form.items():
        reason = bad_text(value) or bad_text(name)
        if reason:
            raise ConsoleRefusal(422, f"The field {name[:40]!r} holds {reason}, which cannot be stored.")
    await load_session(request)
    return form


def redirect(request: Request, url: str, text: str | None = None, role: str = "status") -> RedirectResponse:
    """303 to `url`, with an optional message for the next page."""
    response = RedirectResponse(url, status_code=303)
    if text:
        cookies.set_flash(request, response, cookies.Flash(text, role))
    return response


ConsoleUser = Annotated[User, Depends(console_user)]
ConsoleOwner = Annotated[None, Depends(console_owner)]
ConsoleForm = Annotated[dict[str, str], Depends(console_form)]
