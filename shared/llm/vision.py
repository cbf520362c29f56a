"""Whether the chat model takes images, and the settings of the separate vision model when it does not.

LLM_VISION says so outright; unset, it is on where the provider is known to take images (Anthropic's
Messages API always does) and off elsewhere, since an OpenAI-compatible server may serve a text-only model
that refuses a request with an image part.
"""

from __future__ import annotations

from shared.config import Settings
from shared.llm.client import is_anthropic

VISION_MAX_TOKENS = 1024
IMAGE_MAX_BYTES = 5 * 1024 * 1024  # Anthropic's limit for one image; the most a model call carries inline


def model_sees_images(settings: Settings) -> bool:
    """LLM_VISION, or the provider's known answer when it is unset."""
    if settings.llm_vision is not None:
        return settings.llm_vision
    return bool(settings.llm_base_url) and is_anthropic(settings)


def vision_configured(settings: Settings) -> bool:
    """A separate vision model is configured (VISION_MODEL): `vision_analyze` is offered."""
    return bool(settings.vision_model)


def vision_settings(settings: Settings) -> Settings:
    """The settings of a call to VISION_MODEL: VISION_BASE_URL (default LLM_BASE_URL) with its own key, no fallback.

    The chat model's key goes only to the chat model's URL: a vision model elsewhere gets VISION_API_KEY or none."""
    own_url = settings.vision_base_url and settings.vision_base_url != settings.llm_base_url
    return settings.model_copy(update={
        "llm_model": settings.vision_model, "llm_fallback_model": None,
        "llm_base_url": settings.vision_base_url or settings.llm_base_url,
        "llm_api_key": settings.vision_api_key if own_url else (settings.vision_api_key or settings.llm_api_key),
        "llm_provider": "auto" if own_url else settings.llm_provider,
        "llm_max_tokens": VISION_MAX_TOKENS,
    })
