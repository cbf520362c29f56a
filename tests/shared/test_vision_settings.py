"""Whether the chat model takes images: LLM_VISION, else known from the provider (Anthropic), else off; the
vision model's own URL never gets the chat model's key."""

from __future__ import annotations

from pydantic import SecretStr

from shared.llm.vision import model_sees_images, vision_settings


def test_vision_is_detected_for_anthropic_and_off_elsewhere_unless_said(settings):
    anthropic = settings.model_copy(update={"llm_base_url": "https://api.anthropic.com", "llm_vision": None})
    openai_like = settings.model_copy(update={"llm_base_url": "http://127.0.0.1:9/v1", "llm_vision": None})
    assert model_sees_images(anthropic) and not model_sees_images(openai_like)
    assert model_sees_images(openai_like.model_copy(update={"llm_vision": True}))
    assert not model_sees_images(anthropic.model_copy(update={"llm_vision": False}))
    assert model_sees_images(openai_like.model_copy(update={"llm_provider": "anthropic"}))


def test_a_vision_model_elsewhere_gets_its_own_key_only(settings):
    base = settings.model_copy(update={"llm_base_url": "http://llm:1/v1", "llm_api_key": SecretStr("chat-key-123"),
                                       "vision_model": "llava"})
    same = vision_settings(base)
    assert same.llm_model == "llava" and same.llm_base_url == "http://llm:1/v1"
    assert same.llm_api_key.get_secret_value() == "chat-key-123" and same.llm_fallback_model is None
    other = vision_settings(base.model_copy(update={"vision_base_url": "http://vision:2/v1"}))
    assert other.llm_base_url == "http://vision:2/v1" and other.llm_api_key is None
    keyed = vision_settings(base.model_copy(update={"vision_base_url": "http://vision:2/v1",
                                                    "vision_api_key": SecretStr("vision-key-456")}))
    assert keyed.llm_api_key.get_secret_value() == "vision-key-456"
