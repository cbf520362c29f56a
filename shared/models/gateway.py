"""The messaging gateway's state: bound platform identities, pairing codes, chat sessions, webhook routes,
and the outbox of replies still to deliver."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, StringConstraints, model_validator
from pydantic import Field as PydanticField
from sqlalchemy import Column, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.models.base import created_at_field, time_field

PLATFORM_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
TOOLSETS_PATTERN = r"^([a-z_]+(,[a-z_]+)*)?$"  # "terminal,memory": toolsets a webhook route adds


class GatewayIdentity(SQLModel, table=True):
    """A platform user (a Telegram id, …) bound to a user of the stack."""

    __tablename__ = "gateway_identities"
    __table_args__ = (UniqueConstraint("platform", "platform_user_id", name="uq_gateway_identity"),)

    id: str = Field(primary_key=True, max_length=40)
    platform: str = Field(max_length=32)
    platform_user_id: str = Field(max_length=128)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    display_name: str = Field(default="", max_length=128)
    created_at: datetime = created_at_field()


class PairingRequest(SQLModel, table=True):
    """A pairing code handed to an unknown platform user; only its salted digest is kept."""

    __tablename__ = "pairing_requests"

    id: str = Field(primary_key=True, max_length=40)
    platform: str = Field(max_length=32, index=True)
    platform_user_id: str = Field(max_length=128)
    display_name: str = Field(default="", max_length=128)
    salt: str = Field(max_length=32)
    code_hash: str = Field(max_length=64)
    status: str = Field(default="pending", max_length=16)  # pending | approved
    created_at: datetime = created_at_field()
    expires_at: datetime = time_field(nullable=False)


class PairingLock(SQLModel, table=True):
    """Failed approvals of a platform; five lock its approvals for an hour."""

    __tablename__ = "pairing_locks"

    platform: str = Field(primary_key=True, max_length=32)
    failures: int = Field(default=0, nullable=False)
    locked_until: datetime | None = time_field()


class GatewayChat(SQLModel, table=True):
    """The session a chat's session key (`agent:main:telegram:dm:<chat>`, …) currently continues."""

    __tablename__ = "gateway_chats"

    key: str = Field(primary_key=True, max_length=255)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    session_id: str = Field(foreign_key="sessions.id", max_length=40)
    updated_at: datetime = created_at_field()


class WebhookRoute(SQLModel, table=True):
    """A signed inbound webhook: its name in the URL, the user it acts for, where replies go."""

    __tablename__ = "webhook_routes"

    id: str = Field(primary_key=True, max_length=40)
    name: str = Field(unique=True, max_length=64)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    # Kept as is: the gateway needs it to verify and to sign (HMAC), a digest would not do.
    secret: str = Field(max_length=128)
    callback_url: str | None = Field(default=None, max_length=2000)
    deliver: str | None = Field(default=None, max_length=200)
    # Toolsets its turns may use beyond the read-only tools (comma list; services/worker/tools/toolsets.py).
    toolsets: str = Field(default="", max_length=200)
    created_at: datetime = created_at_field()


class OutboxItem(SQLModel, table=True):
    """One reply to deliver (a Telegram chat, a callback URL), recorded before the first send."""

    __tablename__ = "gateway_outbox"

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    target: str = Field(max_length=2100)  # "telegram:<chat_id>" or "callback:<route name>"
    chat_id: str = Field(default="", max_length=128)
    turn_id: str | None = Field(default=None, max_length=40)
    # None while the turn still runs: recorded when the turn starts, so a restart mid-turn still delivers it
    text: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    # A file to send (its text is the caption): an attachment the agent sent with send_file
    attachment_id: str | None = Field(default=None, max_length=40)
    status: str = Field(default="pending", max_length=16, index=True)  # pending | sent | failed
    attempts: int = Field(default=0, nullable=False)
    last_error: str | None = Field(default=None, max_length=500)
    next_attempt_at: datetime = created_at_field()
    created_at: datetime = created_at_field()
    sent_at: datetime | None = time_field()


# -- API bodies and answers ------------------------------------------------------------------------

class IdentityAsk(BaseModel):
    platform: str = PydanticField(pattern=PLATFORM_PATTERN)
    platform_user_id: str = PydanticField(min_length=1, max_length=128)
    display_name: str = PydanticField(default="", max_length=128)
    # False: only say whether the user is bound (a button press must never ask for a pairing code)
    request_code: bool = True


class IdentityAnswer(BaseModel):
    """`bound` (with the user), `code` (a fresh pairing code), `wait` (asked too recently), `busy` (too many
    pending codes on this platform), `unknown` (not bound, and no code was asked for)."""

    status: str
    user_id: str | None = None
    user_name: str | None = None
    code: str | None = None
    expires_at: datetime | None = None


class PairingApprove(BaseModel):
    platform: str = PydanticField(pattern=PLATFORM_PATTERN)
    code: str = PydanticField(min_length=1, max_length=32)
    user: str | None = PydanticField(default=None, max_length=64)


class PairingDeny(BaseModel):
    """Deny by exactly one of: the code the person holds, the request's id, or the platform user id."""

    platform: str = PydanticField(pattern=PLATFORM_PATTERN)
    code: str | None = PydanticField(default=None, min_length=1, max_length=32)
    request_id: str | None = PydanticField(default=None, min_length=1, max_length=40)
    platform_user_id: str | None = PydanticField(default=None, min_length=1, max_length=128)

    @model_validator(mode="after")
    def _exactly_one(self) -> "PairingDeny":
        if sum(v is not None for v in (self.code, self.request_id, self.platform_user_id)) != 1:
            raise ValueError("name exactly one of code, request_id or platform_user_id")
        return self


class PairingRevoke(BaseModel):
    platform: str = PydanticField(pattern=PLATFORM_PATTERN)
    platform_user_id: str = PydanticField(min_length=1, max_length=128)


class PairingPending(BaseModel):
    id: str
    platform: str
    platform_user_id: str
    display_name: str
    created_at: datetime
    expires_at: datetime


class IdentityPublic(BaseModel):
    platform: str
    platform_user_id: str
    user_id: str
    user_name: str
    display_name: str
    created_at: datetime


class PairingList(BaseModel):
    pending: list[PairingPending]
    bound: list[IdentityPublic]


class ChatAsk(BaseModel):
    key: str = PydanticField(min_length=1, max_length=255)
    fresh: bool = False


class ChatAnswer(BaseModel):
    key: str
    session_id: str
    created: bool


class WebhookCreate(BaseModel):
    name: str = PydanticField(pattern=NAME_PATTERN)
    user: str = PydanticField(min_length=1, max_length=64)
    callback_url: str | None = PydanticField(default=None, max_length=2000, pattern=r"^https?://")
    deliver: str | None = PydanticField(default=None, max_length=200, pattern=r"^telegram:-?[0-9]{1,20}$")
    toolsets: str = PydanticField(default="", max_length=200, pattern=TOOLSETS_PATTERN)


class DeliveryClaim(BaseModel):
    """A verified webhook request's marks (its signature, a GitHub delivery id) and how long to keep them."""

    keys: list[Annotated[str, StringConstraints(min_length=1, max_length=200)]] = PydanticField(min_length=1,
                                                                                                max_length=4)
    ttl_seconds: int = PydanticField(ge=1, le=30 * 24 * 3600)


class DeliveryAnswer(BaseModel):
    first: bool


class WebhookPublic(BaseModel):
    name: str
    user_id: str
    callback_url: str | None
    deliver: str | None
    toolsets: str
    created_at: datetime


class WebhookIssued(WebhookPublic):
    secret: str
    warning: str | None = None  # at creation: why replies to the callback would be refused


class OutboxCreate(BaseModel):
    target: str = PydanticField(min_length=1, max_length=2100)
    chat_id: str = PydanticField(default="", max_length=128)
    turn_id: str | None = PydanticField(default=None, max_length=40)
    text: str | None = PydanticField(default=None, max_length=1_000_000)  # None: the turn's reply, once it ends


class OutboxFill(BaseModel):
    text: str = PydanticField(max_length=1_000_000)


class OutboxResult(BaseModel):
    ok: bool
    give_up: bool = False  # a failure that no retry can fix (the turn is gone): failed at once
    error: str | None = PydanticField(default=None, max_length=500)
    retry_in_seconds: float | None = PydanticField(default=None, ge=0, le=86_400)


class OutboxPublic(BaseModel):
    id: str
    user_id: str
    target: str
    chat_id: str
    turn_id: str | None
    text: str | None
    attachment_id: str | None = None
    status: str
    attempts: int
    last_error: str | None
    created_at: datetime
    sent_at: datetime | None
