"""The scripted model's Anthropic wire format (re-exported from services/demo_model/anthropic_wire.py)."""

from services.demo_model.anthropic_wire import *  # noqa: F401,F403
from services.demo_model.anthropic_wire import AnthropicWire  # noqa: F401
