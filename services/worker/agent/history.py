"""A session's stored messages as the OpenAI-format history the model sees."""

from __future__ import annotations

from typing import Any

from shared.llm.wire import WireMessage
from shared.models.sessions import Message


def interrupted_result(name: str) -> str:
    """The result recorded for a call whose worker stopped mid-way: never re-run it blindly."""
    return (
        f"[Tool execution interrupted: the worker running this turn stopped before {name} finished; "
        "its effect is unknown. Check the current state before retrying.]"
    )


def to_wire(message: Message) -> WireMessage:
    """One stored message in the OpenAI chat format (a user message as the model was first sent it), frozen:
    it is encoded once, however many calls send it (shared/llm/wire.py)."""
    if message.role == "assistant":
        if message.tool_calls:
            return WireMessage(role="assistant", content=message.content, tool_calls=message.tool_calls)
        return WireMessage(role="assistant", content=message.content)
    if message.role == "tool":
        return WireMessage(role="tool", tool_call_id=message.tool_call_id, content=message.content or "")
    return WireMessage(role=message.role, content=message.api_content or message.content or "")


def unanswered_calls(messages: list[Message]) -> list[dict[str, Any]]:
    """Calls of the last message, when it is an assistant tool-call message, that have no result yet.

    Results always directly follow their assistant message, so only a trailing batch can be open.
    """
    index = len(messages) - 1
    while index >= 0 and messages[index].role == "tool":
        index -= 1
    if index < 0 or messages[index].role != "assistant" or not messages[index].tool_calls:
        return []
    answered = {m.tool_call_id for m in messages[index + 1:]}
    return [call for call in messages[index].tool_calls if call["id"] not in answered]


def call_name(call: dict[str, Any]) -> str:
    return (call.get("function") or {}).get("name") or "the tool"


def build_history(messages: list[Message]) -> list[dict[str, Any]]:
    """The wire history in id order; a call left without a result gets an 'interrupted' result.

    An assistant message with tool calls must be followed by one result per call, or providers
    refuse the whole request; a turn that failed mid-batch would otherwise poison the session.
    """
    history: list[dict[str, Any]] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        history.append(to_wire(message))
        index += 1
        if message.role != "assistant" or not message.tool_calls:
            continue
        answered = set()
        while index < len(messages) and messages[index].role == "tool":
            history.append(to_wire(messages[index]))
            answered.add(messages[index].tool_call_id)
            index += 1
        for call in message.tool_calls:
            if call["id"] not in answered:
                content = interrupted_result(call_name(call))
                history.append(WireMessage(role="tool", tool_call_id=call["id"], content=content))
    return history
