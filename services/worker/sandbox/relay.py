"""Carrying a proxied connection's bytes, and the answers the egress proxy gives itself (egress.py)."""

from __future__ import annotations

import asyncio

CHUNK = 64 * 1024
LINGER_SECONDS = 1.0  # how long a refused client may go on sending before the proxy closes on it
LINGER_CHUNKS = 4


class Refusal(Exception):
    """A request the proxy answers itself, with this status and reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


REASONS = {400: "Bad Request", 403: "Forbidden", 408: "Request Timeout", 431: "Request Header Fields Too Large",
           502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}


class Quiet:
    """When either direction of a relay last carried a byte."""

    def __init__(self, loop: asyncio.AbstractEventLoop, idle: float) -> None:
        self.loop, self.idle, self.last = loop, idle, loop.time()

    def touch(self) -> None:
        self.last = self.loop.time()

    def too_long(self) -> bool:
        return self.loop.time() - self.last >= self.idle


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, quiet: Quiet) -> None:
    """Copy one direction, at most a chunk in flight (drain waits for the other side to take it)."""
    try:
        while True:
            try:
                data = await asyncio.wait_for(reader.read(CHUNK), quiet.idle)
            except asyncio.TimeoutError:
                if quiet.too_long():
                    break
                continue
            if not data:
                break
            quiet.touch()
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        pass
    finally:
        if quiet.too_long():
            writer.close()


async def answer(writer: asyncio.StreamWriter, refusal: Refusal, reader: asyncio.StreamReader | None = None) -> None:
    """The proxy's own answer: a status line and the reason as plain text, then close.

    With the reader, what the client still sends is read and dropped for a moment first: closing on unread
    bytes resets the connection, and the client would lose the answer."""
    body = (refusal.reason + "\n").encode()
    head = (f"HTTP/1.1 {refusal.status} {REASONS.get(refusal.status, 'Error')}\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode()
    try:
        writer.write(head + body)
        await writer.drain()
        if reader is not None and writer.can_write_eof():
            writer.write_eof()
            await asyncio.wait_for(_discard(reader), LINGER_SECONDS)
    except (OSError, RuntimeError, asyncio.TimeoutError):
        pass
    finally:
        writer.close()


async def _discard(reader: asyncio.StreamReader) -> None:
    for _ in range(LINGER_CHUNKS):
        if not await reader.read(CHUNK):
            return
