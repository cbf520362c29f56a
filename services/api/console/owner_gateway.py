"""The owner's gateway pages: pairing requests (approve or deny with the code, or deny by request id) and webhook
routes.

Forms are checked with the admin API's own body models (PairingApprove, PairingDeny, WebhookCreate) and
handled by the same store calls as /v1/admin/pairing and /v1/admin/webhooks; a route's secret is shown once.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import ValidationError

from services.api.console.actions import attempt, invalid, parsed
from services.api.console.deps import ConsoleForm, ConsoleOwner, redirect
from services.api.console.render import render
from services.api.console.session import Flash
from shared.errors import HermesError
from shared.models.gateway import PairingApprove, PairingDeny, PairingRevoke, WebhookCreate
from shared.security import callback_targets
from shared.stores import pairing, users, webhook_routes

router = APIRouter(include_in_schema=False)


@router.get("/owner/pairing")
def pairing_page(request: Request, _owner: ConsoleOwner):
    """Pending requests (never their codes: the person tells you theirs) and bound identities."""
    db = request.app.state.db
    return render(request, "owner_pairing.html", active="pairing", pending=pairing.list_pending(db),
                  bound=pairing.list_bound(db))


@router.post("/owner/pairing")
def decide_pairing(request: Request, _owner: ConsoleOwner, form: ConsoleForm):
    """Approve (bind to a user, or a new one named after them) or deny the holder of a code."""
    db, approve = request.app.state.db, form.get("decision") != "deny"
    try:
        body = parsed(PairingApprove if approve else PairingDeny, form)
    except ValidationError as exc:
        return redirect(request, "/owner/pairing", f"Not accepted: {invalid(exc)}", "alert")
    return _answer(request, lambda: _approve(db, body) if approve else _deny(db, body))


def _answer(request: Request, decide) -> object:
    """Back to the page with what was done, or with the refusal (a wrong code or a request already gone is shown
    on the page, though the API answers it 404)."""
    try:
        done = decide()
    except HermesError as exc:
        return redirect(request, "/owner/pairing", exc.message, "alert")
    return redirect(request, "/owner/pairing", done)


def _approve(db, body: PairingApprove) -> str:
    identity = pairing.approve(db, body.platform, body.code, body.user)
    who = identity.display_name or identity.platform_user_id
    return f"Paired {who} ({body.platform}) with user {users.get_user(db, identity.user_id).name}."


def _deny(db, body: PairingDeny) -> str:
    request = pairing.deny(db, body.platform, body.code, request_id=body.request_id,
                           platform_user_id=body.platform_user_id)
    what = "code" if body.code is not None else "request"
    return f"Denied the {what} of {request.display_name or request.platform_user_id} ({body.platform})."


@router.post("/owner/pairing/dismiss")
def dismiss_pairing(request: Request, _owner: ConsoleOwner, form: ConsoleForm):
    """Deny a waiting request by its id, without its code (the owner sees the request, not the code)."""
    try:
        body = parsed(PairingDeny, form)
    except ValidationError as exc:
        return redirect(request, "/owner/pairing", f"Not accepted: {invalid(exc)}", "alert")
    return _answer(request, lambda: _deny(request.app.state.db, body))


@router.post("/owner/pairing/revoke")
def revoke_pairing(request: Request, _owner: ConsoleOwner, form: ConsoleForm):
    """Unbind a platform identity: its next message gets a pairing code again."""
    try:
        body = parsed(PairingRevoke, form)
    except ValidationError as exc:
        return redirect(request, "/owner/pairing", f"Not accepted: {invalid(exc)}", "alert")
    return attempt(request, "/owner/pairing",
                   lambda: pairing.revoke(request.app.state.db, body.platform, body.platform_user_id),
                   f"Unbound {body.platform} user {body.platform_user_id}.")


def _webhooks_page(request: Request, *, status_code: int = 200, **context):
    db = request.app.state.db
    names = {u.id: u.name for u in users.list_users(db)}
    return render(request, "owner_webhooks.html", status_code=status_code, active="webhooks",
                  routes=webhook_routes.list_all(db), names=names, **context)


@router.get("/owner/webhooks")
def webhooks_page(request: Request, _owner: ConsoleOwner):
    return _webhooks_page(request)


@router.post("/owner/webhooks")
def create_webhook(request: Request, _owner: ConsoleOwner, form: ConsoleForm):
    """A signed webhook route acting for a user; its secret is in this answer only."""
    db = request.app.state.db
    try:
        body = parsed(WebhookCreate, form)
        user = users.find_user(db, body.user)
        row = webhook_routes.create(db, body.name, user.id, body.callback_url, body.deliver, body.toolsets)
    except ValidationError as exc:
        return _webhooks_page(request, status_code=422, flash=Flash(f"Not created: {invalid(exc)}", "alert"))
    except HermesError as exc:
        return _webhooks_page(request, status_code=exc.status_code, flash=Flash(exc.message, "alert"))
    warning = callback_targets.refusal(row.callback_url, request.app.state.settings.webhook_callback_allow)
    return _webhooks_page(request, status_code=201, issued=row, warning=warning)


@router.post("/owner/webhooks/{name}/remove")
def remove_webhook(request: Request, name: str, _owner: ConsoleOwner, form: ConsoleForm):
    return attempt(request, "/owner/webhooks", lambda: webhook_routes.delete(request.app.state.db, name),
                   f"Removed the webhook route {name}.")
