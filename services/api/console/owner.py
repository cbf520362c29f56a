"""The owner's console pages (admin key only; anyone else gets 404): users and keys, stack status, deliveries.

Pairing and webhook routes live in owner_gateway.py and are included here, so `/owner/*` is one router.
Every action calls what the admin JSON routes call: users.create_user / create_key, auth_cache.revoke_key,
stack_status.admin_status, outbox.by_status. A key or secret is shown once, in the answer that made it.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import ValidationError

from services.api.auth_cache import revoke_key
from services.api.console import owner_gateway
from services.api.console.actions import attempt, invalid, parsed
from services.api.console.deps import ConsoleForm, ConsoleOwner
from services.api.console.render import render
from services.api.console.session import Flash
from services.api.schemas import UserCreateBody
from services.api.stack_status import admin_status
from shared.errors import HermesError
from shared.messaging.connections import get_redis
from shared.stores import outbox, users

router = APIRouter(include_in_schema=False)
router.include_router(owner_gateway.router)

DELIVERY_STATUSES = ("failed", "pending", "sent")


def _users_page(request: Request, *, status_code: int = 200, **context):
    db = request.app.state.db
    people = [(u, users.list_keys(db, u.id)) for u in users.list_users(db)]
    return render(request, "owner_users.html", status_code=status_code, active="users", people=people, **context)


@router.get("/owner/users")
def users_page(request: Request, _owner: ConsoleOwner):
    """Every user with their keys (prefixes only; revoked ones marked)."""
    return _users_page(request)


@router.post("/owner/users")
def create_user(request: Request, _owner: ConsoleOwner, form: ConsoleForm):
    """Create a user under the API's name rules (POST /v1/users); a taken name is refused plainly."""
    try:
        body = parsed(UserCreateBody, form)
        user = users.create_user(request.app.state.db, body.name)
    except ValidationError as exc:
        return _users_page(request, status_code=422, flash=Flash(f"Not created: {invalid(exc)}", "alert"))
    except HermesError as exc:
        return _users_page(request, status_code=exc.status_code, flash=Flash(exc.message, "alert"))
    return _users_page(request, status_code=201, flash=Flash(f"Created user {user.name}."))


@router.post("/owner/users/{user_id}/keys")
def create_key(request: Request, user_id: str, _owner: ConsoleOwner, form: ConsoleForm):
    """Issue a key (POST /v1/users/{id}/keys) and show it in this answer only."""
    db = request.app.state.db
    user = users.find_user(db, user_id)
    key, plaintext = users.create_key(db, user.id)
    return _users_page(request, status_code=201, issued={"user": user, "key": key, "plaintext": plaintext})


@router.post("/owner/users/{user_id}/keys/{key_id}/revoke")
def revoke(request: Request, user_id: str, key_id: str, _owner: ConsoleOwner, form: ConsoleForm):
    """Revoke a key in every api process at once (DELETE /v1/users/{id}/keys/{key_id})."""
    state = request.app.state
    user = users.find_user(state.db, user_id)
    return attempt(request, "/owner/users",
                   lambda: revoke_key(state.db, state.auth_cache, get_redis(state.settings), state.settings, user.id,
                                      key_id),
                   f"Revoked a key of {user.name}.")


@router.get("/owner/status")
def status_page(request: Request, _owner: ConsoleOwner):
    """Live services, queue depths, turns by status and the latest turns (GET /v1/admin/status)."""
    state = request.app.state
    status = admin_status(state.db, get_redis(state.settings), state.settings)
    return render(request, "owner_status.html", active="status", status=status)


@router.get("/owner/deliveries")
def deliveries_page(request: Request, _owner: ConsoleOwner, status: str = "failed"):
    """Gateway replies by delivery status, failed ones by default (GET /v1/admin/outbox)."""
    status = status if status in DELIVERY_STATUSES else "failed"
    items = outbox.by_status(request.app.state.db, status)
    return render(request, "owner_deliveries.html", active="deliveries", items=items, status=status,
                  statuses=DELIVERY_STATUSES)
