"""What a model call returns: the completion, its tool calls and usage; and the cancellation signal."""

from __future__ import annotations

from dataclasses import dataclass, field


class Cancelled(Exception):
    """The caller's `cancelled()` turned true while the model call was under way."""


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for; `arguments` is the raw JSON text (may be malformed)."""

    id: str
    name: str
    arguments: str

    def to_openai(self) -> dict:
        """The call as it appears in an assistant message of the OpenAI history."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True)
class Usage:
    """Tokens spent by one call (the provider's numbers, or an estimate when it sent none).

    `cached_tokens` is the part of `prompt_tokens` the provider read from its prompt cache (OpenAI
    `prompt_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`); 0 when it said nothing.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens,
                     self.cached_tokens + other.cached_tokens)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class Completion:
    """One answer of the model; `model` is the model that actually answered (primary or fallback)."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    model: str = ""

    def to_message(self) -> dict:
        """The assistant message to append to the OpenAI-format history."""
        message: dict = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        return message
