"""The OpenAI chat-completions wire format: the request we accept and the objects we answer with."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from services.api.sse_json import sse_json

SYSTEM_ROLES = frozenset({"system", "developer"})
HISTORY_ROLES = frozenset({"user", "assistant", "tool"})


MAX_IMAGES = 10
IMAGE_URL_PREFIXES = ("data:image/", "http://", "https://")


def content_text(content: str | list[dict[str, Any]] | None) -> str | None:
    """The text of a message's content: a string, or the text parts joined; image_url parts are checked and left
    for image_urls, any other part type is refused."""
    if content is None or isinstance(content, str):
        return content
    texts = []
    for index, part in enumerate(content):
        if part.get("type") == "image_url":
            image_url(part, index)
        elif part.get("type") != "text" or not isinstance(part.get("text"), str):
            raise ValueError(f"content[{index}]: only text and image_url content parts are supported, "
                             f"not {str(part.get('type'))[:40]!r}")
        else:
            texts.append(part["text"])
    return "".join(texts)


def image_url(part: dict[str, Any], index: int) -> str:
    """The URL of an image_url part: a data:image/… URL or an http(s) URL; ValueError naming the part otherwise."""
    value = part.get("image_url")
    url = value.get("url") if isinstance(value, dict) else value
    if not isinstance(url, str) or not url.startswith(IMAGE_URL_PREFIXES):
        raise ValueError(f"content[{index}]: an image_url part needs image_url.url, a data:image/…;base64 URL or "
                         "an http(s) URL")
    return url


def image_urls(content: str | list[dict[str, Any]] | None) -> list[str]:
    """The image URLs of a message's content, in order."""
    if not isinstance(content, list):
        return []
    return [image_url(part, index) for index, part in enumerate(content) if part.get("type") == "image_url"]


class ToolCallFunctionIn(BaseModel):
    """The function a history's tool call named; stored and replayed to the model as sent."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1, max_length=128)
    arguments: str = "{}"


class ToolCallIn(BaseModel):
    """One tool call of an assistant message in the client's history: the id its result answers is required."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1, max_length=128)
    type: Literal["function"] = "function"
    function: ToolCallFunctionIn


class ChatMessageIn(BaseModel):
    """One message of the request; unknown fields are tolerated because clients send many."""

    model_config = ConfigDict(extra="allow")

    role: str = Field(max_length=32)
    content: str | list[dict[str, Any]] | None = None
    name: str | None = Field(default=None, max_length=128)
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = Field(default=None, min_length=1, max_length=128)

    @property
    def text(self) -> str | None:
        return content_text(self.content)

    def stored(self) -> dict[str, Any]:
        """The fields a stored Message keeps."""
        return {
            "role": self.role,
            "content": self.text,
            "tool_calls": [call.model_dump() for call in self.tool_calls] if self.tool_calls else None,
            "tool_call_id": self.tool_call_id,
            "name": self.name,
        }


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    """An OpenAI ChatCompletion request; only `messages` matters, the rest is accepted and ignored."""

    model_config = ConfigDict(extra="allow")

    model: str | None = Field(default=None, max_length=200)
    messages: list[ChatMessageIn] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None

    @field_validator("messages")
    @classmethod
    def _ends_with_user_text(cls, messages: list[ChatMessageIn]) -> list[ChatMessageIn]:
        for message in messages:
            content_text(message.content)
            if message.role not in SYSTEM_ROLES | HISTORY_ROLES:
                raise ValueError(f"unknown role {message.role!r}")
            if message.role == "tool" and not message.tool_call_id:
                raise ValueError("a tool message needs the tool_call_id of the call it answers")
        last = messages[-1]
        images = image_urls(last.content)
        if last.role != "user" or not (last.text or images):
            raise ValueError("the last message must be a user message with text or image content")
        if len(images) > MAX_IMAGES:
            raise ValueError(f"the last message may carry at most {MAX_IMAGES} images")
        return messages

    @property
    def instructions(self) -> str | None:
        """The system (and developer) messages joined: the new session's instructions."""
        parts = [m.text for m in self.messages if m.role in SYSTEM_ROLES and m.text]
        return "\n\n".join(parts) or None

    @property
    def first_user_text(self) -> str:
        """The conversation's first user message: with the instructions, what names its session."""
        return next(m.text or "" for m in self.messages if m.role == "user")

    @property
    def history(self) -> list[dict[str, Any]]:
        """The messages before the last one, system messages left out."""
        return [m.stored() for m in self.messages[:-1] if m.role in HISTORY_ROLES]

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: str = "stop"
    logprobs: None = None


class CompletionUsage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    @classmethod
    def of(cls, usage: dict[str, Any] | None) -> "CompletionUsage":
        usage = usage or {}
        prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        return cls(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: CompletionUsage


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "hermes-stack"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None
    code: str | None


class OpenAIErrorBody(BaseModel):
    error: OpenAIErrorDetail


def openai_errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries documenting OpenAI's error body for these statuses."""
    return {status: {"model": OpenAIErrorBody} for status in statuses}


class ChunkMaker:
    """Builds the `data:` lines of one streamed completion."""

    def __init__(self, completion_id: str, model: str, created: int) -> None:
        self.base = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model}

    @staticmethod
    def line(payload: dict[str, Any]) -> str:
        return f"data: {sse_json(payload)}\n\n"

    def delta(self, delta: dict[str, Any], finish_reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return self.line({**self.base, "choices": [choice]})

    def usage(self, usage: CompletionUsage) -> str:
        return self.line({**self.base, "choices": [], "usage": usage.model_dump()})
