"""The smart mode's auxiliary model call: the guardian's one word, through the project's LLM client."""

from __future__ import annotations

from typing import Callable

import redis

from shared.config import Settings
from shared.llm import get_llm

GUARDIAN_MAX_TOKENS = 16


def guardian_settings(settings: Settings) -> Settings:
    """APPROVAL_GUARDIAN_MODEL (default the main model), one attempt, a short answer, its own timeout."""
    return settings.model_copy(update={
        "llm_model": settings.approval_guardian_model or settings.llm_model, "llm_fallback_model": None,
        "llm_max_retries": 0, "llm_timeout_seconds": settings.approval_guardian_timeout_seconds,
        "llm_max_tokens": GUARDIAN_MAX_TOKENS,
    })


def model_guardian(settings: Settings, r: redis.Redis | None = None) -> Callable[[list[dict]], str]:
    """A guardian for `decide`: sends the prepared messages, returns the raw answer (the gate parses it)."""
    client = get_llm(guardian_settings(settings), r)

    def ask(messages: list[dict]) -> str:
        return client.complete(messages, stream=False).content or ""

    return ask
