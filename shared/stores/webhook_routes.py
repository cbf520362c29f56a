"""Signed inbound webhook routes: created by the operator, read by the gateway."""

from __future__ import annotations

import secrets

from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from shared.db import Database
from shared.errors import Conflict, NotFound
from shared.ids import new_id
from shared.models.gateway import GatewayChat, WebhookRoute


def create(db: Database, name: str, user_id: str, callback_url: str | None, deliver: str | None,
           toolsets: str = "") -> WebhookRoute:
    """A new route with a fresh 256-bit secret; the name is unique."""
    row = WebhookRoute(id=new_id("whk"), name=name, user_id=user_id, secret=secrets.token_hex(32),
                       callback_url=callback_url, deliver=deliver, toolsets=toolsets)
    try:
        with db.write() as s:
            s.add(row)
    except IntegrityError as exc:
        raise Conflict(f"A webhook route named {name!r} already exists.", code="webhook_exists") from exc
    return row


def get(db: Database, name: str) -> WebhookRoute:
    with db.read() as s:
        row = s.exec(select(WebhookRoute).where(WebhookRoute.name == name)).first()
    if row is None:
        raise NotFound("No such webhook route.", code="webhook_not_found")
    return row


def list_all(db: Database) -> list[WebhookRoute]:
    with db.read() as s:
        return list(s.exec(select(WebhookRoute).order_by(WebhookRoute.created_at)))


def delete(db: Database, name: str) -> WebhookRoute:
    with db.write() as s:
        row = s.exec(select(WebhookRoute).where(WebhookRoute.name == name)).first()
        if row is None:
            raise NotFound("No such webhook route.", code="webhook_not_found")
        s.delete(row)
    return row


def owns_route(db: Database, user_id: str) -> bool:
    """True when a webhook route acts for this user."""
    with db.read() as s:
        return s.exec(select(WebhookRoute.id).where(WebhookRoute.user_id == user_id)).first() is not None


def toolsets_of_session(db: Database, session_id: str) -> str:
    """The toolsets the route a webhook session belongs to adds ("" when none, or the route is gone)."""
    with db.read() as s:
        chat = s.exec(select(GatewayChat).where(GatewayChat.session_id == session_id)).first()
        if chat is None:
            return ""
        _, _, key = chat.key.partition("|")  # "<user>|webhook:<route>:<chat>"
        name = key.split(":")[1] if key.startswith("webhook:") and key.count(":") >= 2 else ""
        route = s.exec(select(WebhookRoute).where(WebhookRoute.name == name,
                                                  WebhookRoute.user_id == chat.user_id)).first()
    return route.toolsets if route is not None else ""
