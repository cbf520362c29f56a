"""The scripted model's prompt cache: how much of a request a provider would have cached already.

Real providers (OpenAI, Anthropic) cache the longest prefix of the prompt — tools first, then the
system prompt, then the messages — that an earlier request already sent. The scripted model keeps
the canonical serialization of every request it answered in this run and reports, for each new
one, the tokens of the longest prefix shared with any of them (`cached_tokens`). Tokens are a
deterministic estimate, one per four characters of the serialization, and `prompt_tokens` uses
the same count, so the share cached is exact and repeatable.

Finding that prefix must not cost the scripted model more than the stack it measures: among strings kept
in sorted order, the one sharing the longest prefix with a new string is next to where it would be
inserted, so `measure` compares with two neighbours (a bisect, C-speed compares), not with every one kept.
And a conversation's next request repeats its previous one and adds to it: when a new request's tools,
system prompt and leading messages equal a recent request's (Python's `==`, C-speed), its serialization is
that request's with the new messages' appended, and its prefix shared with the kept strings is at least that
request's whole length. A 1,000-message request cost the model ~2.5 ms of CPU in serializing and comparing
before, on the two cores the stack is measured on (bench/README).
"""

from __future__ import annotations

import bisect
import json
import math
import threading
from collections import deque
from dataclasses import dataclass

KEPT = 512  # serializations remembered: a long-running demo server must not grow without bound
CHARS_PER_TOKEN = 4


def _unmarked(value: object) -> object:
    """`value` without Anthropic's `cache_control` markers: they say where to cache, they are not content
    (the client moves them to the newest messages on every call, and the cache still holds)."""
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


# One encoder for every part: `json.dumps` with options builds a new encoder per call, and a long session's
# request has hundreds of messages.
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def _canonical(value: object) -> str:
    text = _ENCODE(value)
    if '"cache_control"' not in text:  # the markers appear as a key wherever they are: nothing to take out
        return text
    return _ENCODE(_unmarked(value))


# A session's every request repeats its history: a plain message (text fields only) is encoded once, found again
# by its fields in the order they came (a key in another order is only a second entry of the same text; sorting
# the fields for the key cost more than the rest of the lookup). Bounded: a long-running demo server must not
# grow without bound.
_PLAIN_KEPT = 50_000
_plain: dict[tuple, str] = {}
_plain_lock = threading.Lock()


def _message(message: object) -> str:
    """`_canonical` of one message, remembered when every field of it is text."""
    if not isinstance(message, dict):
        return _canonical(message)
    try:
        key = tuple(message.items())
        text = _plain.get(key)  # a list or dict among the values cannot be hashed: not a plain message
    except TypeError:
        return _canonical(message)
    if text is None:
        text = _canonical(message)
        if all(isinstance(v, str) for v in message.values()):
            with _plain_lock:
                if len(_plain) >= _PLAIN_KEPT:
                    _plain.clear()
                _plain[key] = text
    return text


def serialize(body: dict) -> str:
    """Tools, then system prompt, then each message, as canonical JSON lines (either wire format)."""
    return _extended(body, [])[0].text


def tokens(chars: int) -> int:
    """The prompt-token estimate for a serialization of `chars` characters (rounded up)."""
    return math.ceil(chars / CHARS_PER_TOKEN)


def shared_prefix(a: str, b: str, low: int = 0) -> int:
    """Length of the longest common prefix, by binary search over slice equality (C-speed compares).

    `low` is a length already known to be shared.
    """
    high = min(len(a), len(b))
    low = min(low, high)
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:  # the first `low` characters are known to be shared
            low = middle
        else:
            high = middle - 1
    return low


@dataclass(frozen=True)
class _Serialized:
    """A request's serialization with what it was built from: `head` is its tools and system prompt's lines."""

    head: str
    messages: list
    text: str


RECENT = 4  # serializations a new request may extend: a session's last turn, a review of it, another session's


def _head(body: dict) -> str:
    head = _canonical(body.get("tools") or []) + "\n"
    return head + _canonical(body.get("system")) + "\n" if "system" in body else head


def _extended(body: dict, recent: list[_Serialized]) -> tuple[_Serialized, str]:
    """`body` serialized, and the text of the recent serialization it extends ("" if none).

    Leading messages equal as Python values (`==` takes 1, 1.0 and True alike: a client that resends its history
    does not change one for another in place) serialize alike."""
    head, messages = _head(body), body.get("messages") or []
    for earlier in recent:
        n = len(earlier.messages)
        if earlier.head == head and len(messages) >= n and messages[:n] == earlier.messages:
            text = earlier.text + "".join(_message(m) + "\n" for m in messages[n:])
            return _Serialized(head, messages, text), earlier.text
    return _Serialized(head, messages, head + "".join(_message(m) + "\n" for m in messages)), ""


@dataclass(frozen=True)
class PromptUsage:
    """The prompt side of one request's usage: every prompt token, and how many were cached."""

    prompt_tokens: int
    cached_tokens: int


class PrefixCache:
    """The serializations seen in this run; `measure` reports one request and then remembers it."""

    def __init__(self, kept: int = KEPT) -> None:
        self._kept = kept
        self._arrival: deque[str] = deque()  # oldest first, to forget the oldest past `kept`
        self._sorted: list[str] = []
        self._recent: deque[_Serialized] = deque(maxlen=RECENT)  # newest first
        self._lock = threading.Lock()

    def measure(self, body: dict) -> PromptUsage:
        with self._lock:
            recent = list(self._recent)
        serialized, known = _extended(body, recent)
        text = serialized.text
        with self._lock:
            at = bisect.bisect_left(self._sorted, text)
            neighbours = self._sorted[max(0, at - 1):at + 1]
            # a neighbour that does not start with `known` (a prefix of `text`) shares less with it than one that does
            starts = [earlier for earlier in neighbours if earlier.startswith(known)] if known else []
            pool, low = (starts, len(known)) if starts else (neighbours, 0)
            longest = max((shared_prefix(text, earlier, low) for earlier in pool), default=0)
            self._remember(text, at)
            self._recent.appendleft(serialized)
        # A cached token is a whole one: round down, so cached never exceeds the prompt.
        return PromptUsage(tokens(len(text)), longest // CHARS_PER_TOKEN)

    def _remember(self, text: str, at: int) -> None:
        """Keep `text` (its sorted place is `at`), forgetting the oldest beyond `kept` (caller holds the lock)."""
        self._sorted.insert(at, text)
        self._arrival.append(text)
        if len(self._arrival) > self._kept:
            oldest = self._arrival.popleft()
            del self._sorted[bisect.bisect_left(self._sorted, oldest)]

    def clear(self) -> None:
        with self._lock:
            self._arrival.clear()
            self._sorted.clear()
            self._recent.clear()
