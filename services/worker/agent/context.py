"""Per-turn hooks: context that rides on the user's message, and work to do after a turn.

Later features register builders here (the `<memory-update>` note, an external provider's
recall). Their blocks are appended to what the model is sent for this turn's user message; the
exact bytes are stored on that message (`api_content`) the first time, so every later call of the
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
_BUILDERS: list[ContextBuilder] = []
_AFTER_TURN: list[AfterTurn] = []


def register_after_turn(hook: AfterTurn) -> AfterTurn:
    """Run `hook(ctx, status, output)` after every turn this worker finishes (status: completed, failed, …)."""
    if hook not in _AFTER_TURN:
        _AFTER_TURN.append(hook)
    return hook


def after_turn(ctx: TurnContext, status: str, output: str | None) -> None:
    """Call every after-turn hook; one that fails is logged and the others still run."""
    for hook in _AFTER_TURN:
        try:
            hook(ctx, status, output)
        except Exception:
            log.exception("after-turn hook %s failed", getattr(hook, "__name__", hook))


PreCompress = Callable[[TurnContext, "list[dict]"], "str | None"]
_PRE_COMPRESS: list[PreCompress] = []


def register_pre_compress(hook: PreCompress) -> PreCompress:
    """Run `hook(ctx, messages)` before the session's context is compressed; text it returns reaches the summary."""
    if hook not in _PRE_COMPRESS:
        _PRE_COMPRESS.append(hook)
    return hook


def pre_compress(ctx: TurnContext, messages: list[dict]) -> list[str]:
    """What every pre-compress hook wants the summary to keep; a hook that fails is logged and skipped."""
    kept = []
    for hook in _PRE_COMPRESS:
        try:
            text = hook(ctx, messages)
        except Exception:
            log.exception("pre-compress hook %s failed", getattr(hook, "__name__", hook))
            continue
        if text and text.strip():
            kept.append(text.strip())
    return kept


def register_turn_context(builder: ContextBuilder) -> ContextBuilder:
    """Add a builder; builders run in registration order and empty results are left out."""
    if builder not in _BUILDERS:
        _BUILDERS.append(builder)
    return builder


def user_message_for_model(ctx: TurnContext) -> str | None:
    """The user's text plus every registered block, or None when no builder had anything to add.

    A builder that fails is logged and skipped: extra context must never cost the user the turn.
    """
    blocks = []
    for builder in _BUILDERS:
        try:
            block = builder(ctx)
        except Exception:
            log.exception("turn context builder %s failed", getattr(builder, "__name__", builder))
            continue
        if block and block.strip():
            blocks.append(block.strip())
    if not blocks:
        return None
    return "\n\n".join([ctx.turn.input, *blocks])
