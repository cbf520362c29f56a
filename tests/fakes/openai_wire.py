"""The scripted model's OpenAI wire format (re-exported from services/demo_model/openai_wire.py)."""

from services.demo_model.openai_wire import *  # noqa: F401,F403
from services.demo_model.openai_wire import ARGUMENT_PIECE, Wire, error_body, word_chunks  # noqa: F401
