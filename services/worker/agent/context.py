"""Per-turn hooks: context that rides on the user's message, and work to do after a turn.

Builders come from the installed hooks (services/worker/hooks.py): the `<memory-update>` note, an
external provider's recall. Their blocks are appended to what the model is sent for this turn's user
message; the exact bytes are stored on that message (`api_content`) the first time, so every later call of the
session (and a resumed turn) replays them identically and the provider's prompt cache holds.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

import redis

from shared.config import Settings
from shared.db import Database
from shared.models.sessions import ChatSession, Message
from shared.models.turns import Turn
from services.worker.hooks import current

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TurnContext:
    """What a context builder may look at.

    `rows`, after a turn: the turn's stored messages in order, as the attempt that finished it knows them
    (None when it does not; read them from the database then)."""

    settings: Settings
    db: Database
    redis: redis.Redis
    session: ChatSession
    turn: Turn
    rows: tuple[Message, ...] | None = None


ContextBuilder = Callable[[TurnContext], "str | None"]
AfterTurn = Callable[[TurnContext, str, "str | None"], None]


def after_turn(ctx: TurnContext, status: str, output: str | None) -> None:
    """Call every after-turn hook; one that fails is logged and the others still run."""
    for hook in current().after_turn:
        try:
            hook(ctx, status, output)
        except Exception:
            log.exception("after-turn hook %s failed", getattr(hook, "__name__", hook))


PreCompress = Callable[[TurnContext, "list[dict]"], "str | None"]


def pre_compress(ctx: TurnContext, messages: list[dict]) -> list[str]:
    """What every pre-compress hook wants the summary to keep; a hook that fails is logged and skipped."""
    kept = []
    for hook in current().pre_compress:
        try:
            text = hook(ctx, messages)
        except Exception:
            log.exception("pre-compress hook %s failed", getattr(hook, "__name__", hook))
            continue
        if text and text.strip():
            kept.append(text.strip())
    return kept


def user_message_for_model(ctx: TurnContext, base: str | None = None) -> str | None:
    """The user's text (`base`, else the turn's input) plus every registered block; None when neither a block
    nor a `base` had anything to add.

    A builder that fails is logged and skipped: extra context must never cost the user the turn.
    """
    blocks = []
    for builder in current().turn_context:
        try:
            block = builder(ctx)
        except Exception:
            log.exception("turn context builder %s failed", getattr(builder, "__name__", builder))
            continue
        if block and block.strip():
            blocks.append(block.strip())
    if not blocks:
        return base
    return "\n\n".join([ctx.turn.input if base is None else base, *blocks])
