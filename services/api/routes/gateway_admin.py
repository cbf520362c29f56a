"""The operator's side of the gateway (admin key): pairing approvals and denials, webhook routes, failed deliveries."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from services.api.deps import AdminKey, DbDep, SettingsDep
from services.api.schemas import error_responses
from shared.models.gateway import (IdentityPublic, OutboxPublic, PairingApprove, PairingDeny, PairingList,
                                   PairingPending, PairingRevoke, WebhookCreate, WebhookIssued, WebhookPublic)
from shared.security import callback_targets
from shared.stores import outbox, pairing, users, webhook_routes

router = APIRouter(prefix="/v1/admin", tags=["admin"], responses=error_responses(401, 403, 422))


def _identity(identity, user) -> IdentityPublic:
    return IdentityPublic(platform=identity.platform, platform_user_id=identity.platform_user_id, user_id=user.id,
                          user_name=user.name, display_name=identity.display_name, created_at=identity.created_at)


@router.get("/pairing", response_model=PairingList)
def list_pairing(db: DbDep, _admin: AdminKey) -> PairingList:
    """Pending codes (never the codes themselves) and bound identities."""
    pending = [PairingPending.model_validate(p, from_attributes=True) for p in pairing.list_pending(db)]
    return PairingList(pending=pending, bound=[_identity(i, u) for i, u in pairing.list_bound(db)])


@router.post("/pairing/approve", response_model=IdentityPublic, responses=error_responses(404, 429))
def approve_pairing(body: PairingApprove, db: DbDep, _admin: AdminKey) -> IdentityPublic:
    """Bind the holder of a code to `user` (or a new user named after them); 5 misses lock approvals 1 h."""
    identity = pairing.approve(db, body.platform, body.code, body.user)
    return _identity(identity, users.get_user(db, identity.user_id))


@router.post("/pairing/deny", response_model=PairingPending, responses=error_responses(404, 429))
def deny_pairing(body: PairingDeny, db: DbDep, _admin: AdminKey) -> PairingPending:
    """Refuse a request named by its code (misses count as for approve), its id or its platform user id: its code
    stops working, its slot is free and nobody is bound."""
    denied = pairing.deny(db, body.platform, body.code, request_id=body.request_id,
                          platform_user_id=body.platform_user_id)
    return PairingPending.model_validate(denied, from_attributes=True)


@router.post("/pairing/revoke", response_model=IdentityPublic, responses=error_responses(404))
def revoke_pairing(body: PairingRevoke, db: DbDep, _admin: AdminKey) -> IdentityPublic:
    """Unbind a platform identity: its next message gets a pairing code again."""
    identity = pairing.revoke(db, body.platform, body.platform_user_id)
    return _identity(identity, users.get_user(db, identity.user_id))


@router.post("/webhooks", status_code=201, response_model=WebhookIssued, responses=error_responses(404, 409))
def create_webhook(body: WebhookCreate, db: DbDep, settings: SettingsDep, _admin: AdminKey) -> WebhookIssued:
    """A signed webhook route acting for `user`; the secret is in this answer only, with a warning when replies
    to its callback would be refused (a private, loopback or link-local address not in WEBHOOK_CALLBACK_ALLOW)."""
    user = users.find_user(db, body.user)
    row = webhook_routes.create(db, body.name, user.id, body.callback_url, body.deliver, body.toolsets)
    issued = WebhookIssued.model_validate(row, from_attributes=True)
    issued.warning = callback_targets.refusal(body.callback_url, settings.webhook_callback_allow)
    return issued


@router.get("/webhooks", response_model=list[WebhookPublic])
def list_webhooks(db: DbDep, _admin: AdminKey) -> list[WebhookPublic]:
    return [WebhookPublic.model_validate(r, from_attributes=True) for r in webhook_routes.list_all(db)]


@router.delete("/webhooks/{name}", response_model=WebhookPublic, responses=error_responses(404))
def delete_webhook(name: str, db: DbDep, _admin: AdminKey) -> WebhookPublic:
    return WebhookPublic.model_validate(webhook_routes.delete(db, name), from_attributes=True)


@router.get("/outbox", response_model=list[OutboxPublic])
def list_outbox(db: DbDep, _admin: AdminKey,
                status: Annotated[str, Query(pattern="^(pending|sent|failed)$")] = "failed") -> list[OutboxPublic]:
    """Gateway replies by delivery status (default: the ones that finally failed)."""
    return [OutboxPublic.model_validate(r, from_attributes=True) for r in outbox.by_status(db, status)]
