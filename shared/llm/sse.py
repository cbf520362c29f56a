"""A streamed answer's server-sent events, read a network read at a time.

`events_by_read` yields, for each read of the body, the `data` payloads of the events that read completed
(a list, possibly empty). The model clients apply a read's events together and pass their text on as one
delta: a stream read as it arrives still gives one delta per event, and a worker that falls behind a fast
stream (its threads busy, the events waiting in the socket) publishes one `message.delta` per read instead of
one per event. Measured on this bench, reads almost always held one event, so the CPU is the same as before.

It replaces httpx's `iter_lines`, which ends a line wherever `str.splitlines` would: also at U+2028, U+2029
and U+0085, which JSON may leave unescaped inside a string, so a delta holding one was cut in two and the
answer failed as an unreadable stream event. Here a line ends with CRLF, LF or CR, as the SSE format says.
Bytes are split before they are decoded: no byte of a multi-byte UTF-8 character is a CR or an LF.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Iterator

from shared.llm.classify import ProviderProtocolError
from shared.llm.types import Cancelled


def events_by_read(chunks: Iterable[bytes]) -> Iterator[list[str]]:
    """Per read, the `data` of each event it completed; comments and other fields are skipped.

    An event's `data` lines are joined with LF. An event still open when the body ends is yielded last.
    """
    rest = b""
    data: list[str] = []
    for chunk in chunks:
        if not chunk:
            continue
        buffer = rest + chunk
        held = buffer.endswith(b"\r")  # perhaps the first half of a CRLF: wait for the next read
        lines = (buffer[:-1] if held else buffer).replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        rest = lines.pop() + (b"\r" if held else b"")
        completed: list[str] = []
        for line in lines:
            _take(line, data, completed)
        yield completed
    last: list[str] = []
    if rest:
        _take(rest.rstrip(b"\r"), data, last)
    if data:
        last.append("\n".join(data))
    if last:
        yield last


def _take(line: bytes, data: list[str], completed: list[str]) -> None:
    """One line: a blank one ends the open event, a `data` field adds to it (changes both lists in place)."""
    if not line:
        if data:
            completed.append("\n".join(data))
            data.clear()
        return
    field, _, value = line.partition(b":")
    if field == b"data":
        data.append((value[1:] if value.startswith(b" ") else value).decode("utf-8", "replace"))


def event_json(data: str) -> Any:
    """One event's JSON; ProviderProtocolError when it is not JSON."""
    try:
        return json.loads(data)
    except ValueError:
        raise ProviderProtocolError(f"unreadable stream event: {data[:80]!r}") from None


class Shown:
    """A streamed answer's text pieces, and how many of them `on_delta` has been given; `read` applies a
    stream a read at a time and gives each read's new text as one delta."""

    def __init__(self, on_delta: Callable[[str], None] | None) -> None:
        self.on_delta = on_delta
        self.text: list[str] = []
        self._shown = 0

    def flush(self) -> None:
        if self.on_delta and len(self.text) > self._shown:
            self.on_delta("".join(self.text[self._shown:]))
        self._shown = len(self.text)

    def read(self, reads: Iterator[list[str]], apply: Callable[[list[str]], bool],
             cancelled: Callable[[], bool]) -> bool:
        """`apply(events)` each read (True: the answer is complete, stop reading), then its text goes on;
        True when `apply` said so before the body ended. Raises Cancelled between reads."""
        for events in reads:
            if cancelled():
                raise Cancelled()
            try:
                done = apply(events)
            finally:
                self.flush()  # what a read held before a bad event was received: it is shown, as it always was
            if done:
                return True
        return False
