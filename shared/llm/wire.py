"""A chat message as the model is sent it, encoded once however many calls send it.

Every model call sends the session's whole history, so encoding it to JSON grew with the session: 179 KB
at turn 500 of a session, 1.24 ms of the worker's CPU on every call, against 0.04 ms to join the same
messages' encodings kept from earlier calls. A `WireMessage` keeps its own encoding, and `encode_body` joins
them into exactly the bytes httpx's `json=` would send. So that a kept encoding can never be stale, a wire
message is frozen: changing it raises TypeError (build a new one). Its values are not copied: nothing may
change the lists it holds (a stored message's tool calls) either.
"""

from __future__ import annotations

import json
from typing import Any


def dumps(value: Any) -> str:
    """JSON as httpx encodes a request body (httpx._content.encode_json)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class WireMessage(dict):
    """A frozen OpenAI-format message that encodes itself once."""

    __slots__ = ("_json",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._json: str | None = None

    def _frozen(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a wire message cannot be changed; build a new one")

    __setitem__ = __delitem__ = update = pop = popitem = setdefault = clear = __ior__ = _frozen  # type: ignore

    def __reduce__(self):
        return WireMessage, (dict(self),)

    @property
    def encoded(self) -> str:
        if self._json is None:
            self._json = dumps(self)
        return self._json


def encode_message(message: dict) -> str:
    return message.encoded if isinstance(message, WireMessage) else dumps(message)


def encode_body(body: dict[str, Any]) -> bytes:
    """`body` encoded as httpx's `json=` would, byte for byte, its messages from their kept encodings."""
    parts = []
    for key, value in body.items():
        if key == "messages" and isinstance(value, list):
            parts.append(f'{dumps(key)}:[{",".join(encode_message(m) for m in value)}]')
        else:
            parts.append(f"{dumps(key)}:{dumps(value)}")
    return ("{" + ",".join(parts) + "}").encode("utf-8")
