"""Wire messages encode once and join into exactly the bytes httpx would send for the same request."""

from __future__ import annotations

import json
import pickle

import pytest
from httpx._content import encode_json

from shared.llm.wire import WireMessage, encode_body

CALLS = [{"id": "c1", "type": "function", "function": {"name": "write_file",
                                                       "arguments": "{\"path\": \"nötes.md\", \"content\": \"ü\\n\"}"}}]


def body(messages: list) -> dict:
    return {"model": "scripted", "messages": messages, "stream": True,
            "tools": [{"type": "function", "function": {"name": "t", "parameters": {}}}],
            "stream_options": {"include_usage": True}}


def httpx_bytes(value: dict) -> bytes:
    _, stream = encode_json(value)
    return b"".join(stream)


def test_a_request_of_wire_messages_is_the_bytes_httpx_would_send():
    messages = [{"role": "system", "content": "You are Hermes. «quotes» and emoji 🚀"},
                WireMessage(role="user", content="line one\nline \"two\" \u2028 and a tab\t"),
                WireMessage(role="assistant", content=None, tool_calls=CALLS),
                WireMessage(role="tool", tool_call_id="c1", content="ok"),
                WireMessage(role="assistant", content="")]
    sent = encode_body(body(messages))
    assert sent == httpx_bytes(body([dict(m) for m in messages]))
    assert json.loads(sent)["messages"][2]["tool_calls"] == CALLS
    assert encode_body({"model": "m", "messages": []}) == httpx_bytes({"model": "m", "messages": []})


def test_a_wire_message_is_encoded_once_and_cannot_change():
    message = WireMessage(role="user", content="hello")
    assert message.encoded is message.encoded
    for change in (lambda: message.__setitem__("content", "x"), lambda: message.update(content="x"),
                   lambda: message.pop("content"), lambda: message.setdefault("name", "x"),
                   lambda: message.clear(), lambda: message.__delitem__("role")):
        with pytest.raises(TypeError):
            change()
    assert message == {"role": "user", "content": "hello"} and json.loads(message.encoded) == message
    copied = pickle.loads(pickle.dumps(message))
    assert isinstance(copied, WireMessage) and copied == message
