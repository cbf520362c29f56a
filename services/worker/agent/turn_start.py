"""Work a turn starts as soon as its session is read, to run alongside the rest of its pre-call work.

A turn-start hook (services/worker/hooks.py) gets the turn's context right after the worker read the
session row, before the system prompt is built and the transcript loaded; it must only *start* work (on its own thread)
and return at once. The recall provider's search starts here; the turn-context builder that needs
its answer (services/worker/features/providers.py) collects it later instead of searching then.
"""

from __future__ import annotations

import logging
from typing import Callable

from services.worker.agent.context import TurnContext
from services.worker.hooks import current

log = logging.getLogger(__name__)

TurnStart = Callable[[TurnContext], None]


def turn_started(ctx: TurnContext) -> None:
    """Call every turn-start hook; one that fails is logged and costs only its own head start."""
    for hook in current().turn_start:
        try:
            hook(ctx)
        except Exception:
            log.exception("turn-start hook %s failed", getattr(hook, "__name__", hook))
