"""One live MCP session: opened, initialised and its tools listed on the pool's event loop, kept until it ends.

The session lives inside one task (the SDK's streams and task groups must be entered and left by the same
task); other tasks send requests through it. It ends when its server's output ends (a stdio server died),
when a transport fault is reported, or when the pool closes it.
"""

from __future__ import annotations

import asyncio
import threading
from contextlib import AbstractAsyncContextManager
from typing import Any, Callable

import anyio
import mcp_types as types
from mcp import ClientSession

Opener = Callable[[Callable[[], None]], AbstractAsyncContextManager[tuple]]
MAX_LIST_PAGES = 20


class Connection:
    """A session's state as the worker's threads see it: ready (or failed), its tools, why it ended."""

    def __init__(self, opener: Opener, connect_timeout: float, describe_extra: Callable[[], str] = lambda: "",
                 on_drop: Callable[[str], None] = lambda error: None) -> None:
        self.opener = opener
        self.on_drop = on_drop  # told (on the loop) when a ready session ends by itself
        self.connect_timeout = connect_timeout
        self.describe_extra = describe_extra
        self.settled = threading.Event()  # set once ready or failed
        self.alive = False
        self.session: ClientSession | None = None
        self.tools: list[types.Tool] = []
        self.error: str | None = None
        self._stop: asyncio.Event | None = None
        self.closing = False  # the pool ended it: not a drop

    async def run(self) -> None:
        """Open, initialise, list the tools, then hold the session until it ends."""
        self._stop = asyncio.Event()
        try:
            async with self.opener(self.end) as (read, write):
                async with ClientSession(read, write, message_handler=self._on_message) as session:
                    with anyio.fail_after(self.connect_timeout):
                        await session.initialize()
                        self.tools = await list_tools(session)
                    self.session, self.alive = session, True
                    self.settled.set()
                    await self._stop.wait()
                    self.error = self.error or "the server closed the connection"
        except Exception as exc:  # noqa: BLE001 - whatever ended it is what the user is told
            self.error = self.error or describe(exc, self.describe_extra())
        finally:
            self.alive = False
            self.settled.set()
            if self.session is not None and not self.closing:
                self.on_drop(self.error or "the connection ended")

    def end(self, why: str | None = None) -> None:
        """End the session (called on the loop: output ended, a fault seen, or the pool closing it)."""
        if why and not self.error:
            self.error = why
        self.alive = False
        if self._stop is not None:
            self._stop.set()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.end(f"the connection failed: {describe(message)}")


async def list_tools(session: ClientSession) -> list[types.Tool]:
    """Every tool the server lists, following its pages (bounded)."""
    tools: list[types.Tool] = []
    cursor = None
    for _ in range(MAX_LIST_PAGES):
        page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def describe(exc: BaseException, extra: str = "") -> str:
    """A one-line reason from an exception (the first leaf of an exception group), plus what the server said."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, TimeoutError):
        text = "it did not answer in time"
    reason = f"{type(exc).__name__}: {text}" if not isinstance(exc, TimeoutError) else text
    return f"{reason} (it said: {extra})" if extra else reason
