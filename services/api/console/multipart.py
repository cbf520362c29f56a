"""A streaming reader of the console's upload form (multipart/form-data): small fields, then one file.

The file part is handed on chunk by chunk as it arrives (never held whole), so the upload form costs the
same memory as the raw API upload. Small fields (the CSRF token, the message) come before the file in the
form, are read whole up to MAX_FIELD_BYTES each, and are given to `on_file` when the file starts, so the
caller checks the token before a byte of the file is written. Headers and field counts are bounded; a form
that breaks the rules is refused with InvalidInput.
"""

from __future__ import annotations

import re
from typing import AsyncIterator, Awaitable, Callable

from shared.errors import InvalidInput

MAX_FIELD_BYTES = 64 * 1024
MAX_HEADER_BYTES = 8 * 1024
MAX_FIELDS = 16
_BOUNDARY = re.compile(r'boundary="?([^";]{1,200})"?')
_NAME = re.compile(r'\bname="([^"]{0,200})"')
_FILENAME = re.compile(r'\bfilename="([^"]{0,4096})"')

OnFile = Callable[[dict[str, str], str], Awaitable[Callable[[bytes], Awaitable[None]]]]


def boundary_of(content_type: str) -> bytes:
    found = _BOUNDARY.search(content_type or "")
    if not content_type.startswith("multipart/form-data") or not found:
        raise InvalidInput("The upload form must be sent as multipart/form-data.")
    return found.group(1).encode("latin-1")


async def read_form(chunks: AsyncIterator[bytes], content_type: str, on_file: OnFile) -> dict[str, str]:
    """The form's small fields; the first file part goes to the writer `on_file(fields, filename)` returns."""
    reader = _Reader(chunks, b"\r\n--" + boundary_of(content_type))
    fields: dict[str, str] = {}
    await reader.start()
    while True:
        headers = await reader.headers()
        if headers is None:
            return fields
        name, filename = _disposition(headers)
        if filename == "":  # a file input left empty: its part carries nothing
            async for _ in reader.body():
                pass
            continue
        if filename is not None:
            write = await on_file(fields, filename)
            async for data in reader.body():
                await write(data)
            continue
        if len(fields) >= MAX_FIELDS:
            raise InvalidInput("The form has too many fields.")
        value = bytearray()
        async for data in reader.body():
            value += data
            if len(value) > MAX_FIELD_BYTES:
                raise InvalidInput(f"The form field {name[:40]!r} is too long.")
        fields[name] = value.decode("utf-8", errors="replace").replace("\r\n", "\n")


def _disposition(headers: str) -> tuple[str, str | None]:
    line = next((h for h in headers.split("\r\n") if h.lower().startswith("content-disposition:")), "")
    name = _NAME.search(line)
    if not name:
        raise InvalidInput("A form part has no name.")
    filename = _FILENAME.search(line)
    return name.group(1), (filename.group(1) if filename else None)


class _Reader:
    """The body split at the boundary; `buffer` never holds more than a chunk plus the delimiter's length."""

    def __init__(self, chunks: AsyncIterator[bytes], delimiter: bytes) -> None:
        self.chunks = chunks.__aiter__()
        self.delimiter = delimiter
        self.buffer = b"\r\n"  # the first delimiter has no CRLF before it: pretend it had
        self.ended = False

    async def more(self) -> None:
        try:
            self.buffer += await self.chunks.__anext__()
        except StopAsyncIteration:
            raise InvalidInput("The form ended early.") from None

    async def start(self) -> None:
        while self.delimiter not in self.buffer:
            if len(self.buffer) > MAX_HEADER_BYTES:
                raise InvalidInput("The form does not start with its boundary.")
            await self.more()
        self.buffer = self.buffer[self.buffer.index(self.delimiter) + len(self.delimiter):]

    async def headers(self) -> str | None:
        """The next part's headers, None after the closing boundary."""
        while len(self.buffer) < 2:
            await self.more()
        if self.buffer.startswith(b"--"):
            return None
        while b"\r\n\r\n" not in self.buffer:
            if len(self.buffer) > MAX_HEADER_BYTES:
                raise InvalidInput("A form part's headers are too long.")
            await self.more()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        return head.decode("utf-8", errors="replace").lstrip("\r\n")

    async def body(self) -> AsyncIterator[bytes]:
        """The part's data up to the next delimiter, in pieces."""
        keep = len(self.delimiter)
        while True:
            at = self.buffer.find(self.delimiter)
            if at >= 0:
                data, self.buffer = self.buffer[:at], self.buffer[at + keep:]
                if data:
                    yield data
                return
            if len(self.buffer) > keep:
                data, self.buffer = self.buffer[:-keep], self.buffer[-keep:]
                yield data
            await self.more()
