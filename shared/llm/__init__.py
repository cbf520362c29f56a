"""The only code that talks to model providers: `get_llm(settings).complete(messages, tools, ...)`."""

from shared.llm.client import LLMClient, get_llm
from shared.llm.types import Cancelled, Completion, ToolCall, Usage

__all__ = ["LLMClient", "get_llm", "Cancelled", "Completion", "ToolCall", "Usage"]
