"""What the gateway asks the api (GATEWAY_API_KEY only): who a platform user is, which session a chat
continues, a webhook route's secret, and the delivery outbox."""

from __future__ import annotations

import logging

from fastapi import APIRouter

from services.api.deps import AsyncRedisDep, DbDep, EnqueueDep, GatewayKey, SettingsDep
from services.api.schemas import error_responses
from shared.messaging import webhook_deliveries
from shared.errors import Forbidden
from shared.http.gateway_auth import ACT_AS_HEADER
from shared.models.gateway import (ChatAnswer, ChatAsk, DeliveryAnswer, DeliveryClaim, IdentityAnswer, IdentityAsk,
                                   OutboxCreate, OutboxFill, OutboxPublic, OutboxResult, WebhookIssued)
from shared.queue.names import END_SESSION
from shared.queue.payloads import EndSession
from shared.stores import gateway_chats, outbox, pairing, users, webhook_routes

log = logging.getLogger(__name__)

router = APIRouter(prefix="/v1/gateway", tags=["gateway"], responses=error_responses(401, 403, 422))


@router.post("/identities", response_model=IdentityAnswer)
def identify(body: IdentityAsk, db: DbDep, settings: SettingsDep, _gateway: GatewayKey) -> IdentityAnswer:
    """A platform user: `bound` (with the user; TELEGRAM_ALLOWED_USERS binds at once), else a pairing code
    (`code`), or none because they asked within 10 minutes (`wait`) or 3 codes are pending (`busy`); with
    `request_code` false an unbound user is only `unknown`."""
    found = pairing.find_identity(db, body.platform, body.platform_user_id)
    if found is None and body.platform == "telegram" and body.platform_user_id in settings.allowed_telegram_ids():
        found = pairing.prebind(db, body.platform, body.platform_user_id, body.display_name)
    if found is not None:
        _identity, user = found
        return IdentityAnswer(status="bound", user_id=user.id, user_name=user.name)
    if not body.request_code:
        return IdentityAnswer(status="unknown")
    issued = pairing.request_code(db, body.platform, body.platform_user_id, body.display_name)
    return IdentityAnswer(status=issued.status, code=issued.code, expires_at=issued.expires_at)


def _bound_user(db, user_id: str):
    if not (pairing.is_bound_user(db, user_id) or webhook_routes.owns_route(db, user_id)):
        raise Forbidden(f"The gateway acts only for a bound user ({ACT_AS_HEADER}).")
    return users.get_user(db, user_id)


@router.post("/users/{user_id}/chats", response_model=ChatAnswer, responses=error_responses(404))
def resolve_chat(user_id: str, body: ChatAsk, db: DbDep, enqueue: EnqueueDep, _gateway: GatewayKey) -> ChatAnswer:
    """The session a chat continues (created on its first message); `fresh` starts a new one (`/new`), and the
    session it replaces has ended (the memory provider hears it once, in the background)."""
    user = _bound_user(db, user_id)
    webhook = body.key.startswith("webhook:")  # the webhook platform's keys
    source = "webhook" if webhook else gateway_chats.GATEWAY_SOURCE
    row, created, replaced = gateway_chats.resolve(db, user.id, body.key, fresh=body.fresh, source=source)
    if replaced is not None:
        try:
            enqueue(END_SESSION, EndSession(session_id=replaced))
        except Exception as exc:  # any broker failure: the idle sweep ends that session later
            log.warning("could not send end_session for %s (%s)", replaced, type(exc).__name__)
    return ChatAnswer(key=body.key, session_id=row.session_id, created=created)


@router.get("/webhooks/{name}", response_model=WebhookIssued, responses=error_responses(404))
def webhook_route(name: str, db: DbDep, _gateway: GatewayKey) -> WebhookIssued:
    """A route with its secret, for verifying inbound requests and signing callbacks."""
    return WebhookIssued.model_validate(webhook_routes.get(db, name), from_attributes=True)


@router.post("/webhooks/{name}/deliveries", response_model=DeliveryAnswer)
async def webhook_delivery(name: str, body: DeliveryClaim, redis: AsyncRedisDep, settings: SettingsDep,
                           _gateway: GatewayKey) -> DeliveryAnswer:
    """Remember a verified request of route `name`; `first` is false when it was received before (a replay)."""
    first = await webhook_deliveries.first_time(redis, settings.broker_key_prefix, name, body.keys, body.ttl_seconds)
    return DeliveryAnswer(first=first)


@router.post("/users/{user_id}/outbox", status_code=201, response_model=OutboxPublic)
def record_reply(user_id: str, body: OutboxCreate, db: DbDep, _gateway: GatewayKey) -> OutboxPublic:
    """Record a reply before its first send; without text, the reply to `turn_id` once that turn ends."""
    user = _bound_user(db, user_id)
    row = outbox.record(db, user.id, body.target, body.chat_id, body.turn_id, body.text)
    return OutboxPublic.model_validate(row, from_attributes=True)


@router.get("/outbox/due", response_model=list[OutboxPublic])
def due_replies(db: DbDep, _gateway: GatewayKey) -> list[OutboxPublic]:
    """Pending replies whose next attempt is due (after a restart: every unsent one)."""
    return [OutboxPublic.model_validate(r, from_attributes=True) for r in outbox.due(db)]


@router.get("/outbox/awaiting", response_model=list[OutboxPublic])
def awaiting_replies(db: DbDep, _gateway: GatewayKey) -> list[OutboxPublic]:
    """Pending replies to turns not yet seen to end (after a restart: the turns that were running)."""
    return [OutboxPublic.model_validate(r, from_attributes=True) for r in outbox.awaiting(db)]


@router.post("/outbox/{item_id}/text", response_model=OutboxPublic, responses=error_responses(404))
def fill_reply(item_id: str, body: OutboxFill, db: DbDep, _gateway: GatewayKey) -> OutboxPublic:
    """The ended turn's reply for an item recorded at its start (set once; a later fill changes nothing)."""
    row = outbox.fill(db, item_id, body.text)
    return OutboxPublic.model_validate(row, from_attributes=True)


@router.post("/outbox/{item_id}", response_model=OutboxPublic, responses=error_responses(404))
def report_reply(item_id: str, body: OutboxResult, db: DbDep, settings: SettingsDep,
                 _gateway: GatewayKey) -> OutboxPublic:
    """One delivery attempt's result: sent, or retried later, or failed for good."""
    row = outbox.report(db, item_id, body.ok, body.error, body.retry_in_seconds, body.give_up,
                        backoff_base=settings.outbox_backoff_base_seconds,
                        backoff_max=settings.outbox_backoff_max_seconds)
    return OutboxPublic.model_validate(row, from_attributes=True)
