"""Sign in and out: a server-side session opened by the API key (and for the owner, the admin key).

"API key" takes a user's key (that user's pages) or the admin key (the owner's pages only); the optional
"Admin key" field, beside a user key, opens both. A key is checked through the API's own lookup.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from services.api.console import session as cookies
from services.api.console.deps import SignInForm, console_form, load_session, redirect
from services.api.console.render import render
from services.api.deps import matches_secret, user_for_key
from shared.stores import users

router = APIRouter(include_in_schema=False)

REFUSED = "That key does not open this console."


def _safe_next(target: str | None) -> str:
    """Only a path on this site (never `//host` or a scheme), so sign-in cannot redirect elsewhere."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


@router.get("/")
async def home(request: Request):
    if not await load_session(request):
        return RedirectResponse("/signin", status_code=303)
    return RedirectResponse("/chat" if request.state.console_user else "/owner/status", status_code=303)


@router.get("/signin")
async def signin_page(request: Request, next: str = "/"):
    await load_session(request)
    return render(request, "signin.html", next=_safe_next(next))


@router.post("/signin")
async def signin(request: Request, form: SignInForm):
    target = _safe_next(form.get("next"))
    api_key, admin_key = form.get("api_key", "").strip(), form.get("admin_key", "").strip()
    admin = request.app.state.settings.admin_api_key
    opened = None
    if api_key and matches_secret(api_key, admin) and not admin_key:
        opened = {"admin_digest": users.hash_key(api_key)}
        target = target if target.startswith("/owner") else "/owner/status"
    elif api_key and await user_for_key(request, api_key) is not None:
        if not admin_key or matches_secret(admin_key, admin):
            opened = {"key_digest": users.hash_key(api_key),
                      "admin_digest": users.hash_key(admin_key) if admin_key else ""}
    if opened is None:
        return render(request, "signin.html", status_code=401, next=target,
                      flash=cookies.Flash(REFUSED, "alert"))
    response = redirect(request, "/chat" if target == "/" and opened.get("key_digest") else target)
    await cookies.start_session(request, response, **opened)
    return response


@router.post("/signout")
async def signout(request: Request):
    """End the session in Redis, so a copy of the cookie dies with it; with no live session there is nothing to end."""
    if not await load_session(request):
        response = redirect(request, "/signin")
        cookies.forget_session(request, response)
        return response
    await console_form(request)  # the session's own CSRF token, or 403
    response = redirect(request, "/signin", "Signed out.")
    await cookies.end_session(request, response)
    return response
