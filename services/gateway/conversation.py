"""One chat's conversation: its long session, its turns one at a time in arrival order, the streamed preview,
approvals, /stop and /new. Platform-neutral: a Surface shows things on the platform."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable
from typing import Protocol

from services.gateway.client import ApiClient, ApiError

log = logging.getLogger(__name__)

MAX_QUEUED = 32
ENDED = frozenset({"completed", "failed", "cancelled"})
TYPING_EVERY_SECONDS = 4.0


class Surface(Protocol):
    async def typing(self) -> None: ...

    async def preview(self, text: str, ref: str | None) -> str | None:
        """Show the reply so far (send, then edit one message, throttled); the message's ref."""

    async def approval(self, data: dict) -> None: ...

    async def question(self, data: dict) -> None:
        """Show the agent's question with one button per choice."""

    async def notice(self, text: str) -> None: ...

    async def expect(self, turn_id: str) -> None:
        """Record the turn's coming reply in the outbox as the turn starts."""

    async def final(self, text: str, ref: str | None, turn_id: str) -> None: ...

    def release(self, turn_id: str) -> None:
        """The turn is over here (answered or not); what is left of its reply is the outbox loop's."""


class ChatRunner:
    """Turns of one session key, strictly one after another; commands act at once."""

    def __init__(self, api: ApiClient, user_id: str, key: str, surface: Surface) -> None:
        self.api, self.user_id, self.key, self.surface = api, user_id, key, surface
        self.session_id: str | None = None
        self.pending: deque[tuple[str, list[str] | Awaitable[list[str] | None]]] = deque()  # (text, files)
        self.current: str | None = None
        self.approvals: list[str] = []
        self.task: asyncio.Task | None = None
        self.stopped_at = 0

    async def session(self, fresh: bool = False) -> str:
        if fresh or self.session_id is None:
            self.session_id = await self.api.chat_session(self.user_id, self.key, fresh=fresh)
        return self.session_id

    def submit(self, text: str, attachments: "list[str] | Awaitable[list[str] | None] | None" = None) -> bool:
        """Queue a message as the next turn; False when MAX_QUEUED already wait. `attachments` are the ids of its
        files, or the upload still under way (its ids, None when the sender was told it failed): the turn waits
        for it in its place, so a question sent right after a photo is never asked before the photo arrives."""
        if self.full:
            return False
        self.pending.append((text, attachments if isinstance(attachments, Awaitable) else list(attachments or ())))
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._drain())
        return True

    @property
    def full(self) -> bool:
        return len(self.pending) >= MAX_QUEUED

    @property
    def busy(self) -> bool:
        return self.current is not None or bool(self.pending)

    async def stop(self) -> bool:
        """Cancel the running turn and drop what waits; True when something was running."""
        self.pending.clear()
        turn_id = self.current
        if turn_id is None:
            return False
        try:
            await self.api.cancel(self.user_id, turn_id)
        except ApiError as exc:
            if exc.status != 409:  # 409: it just finished
                raise
        return True

    async def forget(self) -> dict:
        """Stop what runs, delete the chat's session; the next message starts a new one."""
        await self.stop()
        session_id = await self.session()
        self.session_id = None
        return await self.api.forget_session(self.user_id, session_id)

    async def new_session(self) -> str:
        await self.stop()
        return await self.session(fresh=True)

    async def _drain(self) -> None:
        while self.pending:
            text, files = self.pending.popleft()
            try:
                attachments = await files if isinstance(files, Awaitable) else files
                if attachments is None:
                    continue  # the file was refused and the sender told why: no turn
                await self._run(text, attachments)
            except Exception:
                log.exception("a turn of %s failed in the gateway", self.key)
                await self.surface.notice("Sorry, something went wrong on my side; please try again.")
            finally:
                self.current = None

    async def _run(self, text: str, attachments: list[str] | None = None) -> None:
        """Post the turn (with the ids of the files uploaded for it) and follow its events in the same response
        (the streaming POST), then hand over the answer; the chat shows the agent typing from the moment the
        message is sent."""
        session_id = await self.session()
        typing = asyncio.create_task(self._keep_typing())
        ref, shown, turn_id = None, "", None

        async def accepted(named: str) -> None:
            nonlocal turn_id
            turn_id = self.current = named
            await self.surface.expect(named)

        try:
            async for event in self.api.stream_turn(self.user_id, session_id, text, accepted, attachments):
                if event.type == "message.delta":
                    shown += str(event.data.get("delta", ""))
                    ref = await self.surface.preview(shown, ref)
                elif event.type == "approval.requested":
                    self.approvals.append(str(event.data.get("approval_id", "")))
                    await self.surface.approval(event.data)
                elif event.type == "clarify.requested":
                    await self.surface.question(event.data)
                elif event.type == "review.completed" and event.data.get("summary"):
                    await self.surface.notice(f"💾 {event.data['summary']}")  # what a background review saved
            done = await self.api.turn(self.user_id, turn_id)
            if done.get("status") in ENDED:  # else the stream gave up early: the outbox loop waits for the end
                await self.surface.final(reply_text(done), ref, turn_id)
        finally:
            typing.cancel()
            if turn_id is not None:
                self.surface.release(turn_id)

    async def _keep_typing(self) -> None:
        while True:
            try:
                await self.surface.typing()
            except Exception as exc:
                log.debug("typing indicator failed (%s)", type(exc).__name__)
            await asyncio.sleep(TYPING_EVERY_SECONDS)


def reply_text(turn: dict) -> str:
    """What the chat gets for a finished turn."""
    status = turn.get("status")
    if status == "completed":
        return turn.get("output") or "(no answer)"
    if status == "cancelled":
        return "Stopped."
    error = turn.get("error") or {}
    message = error.get("message") if isinstance(error, dict) else str(error)
    return f"Sorry, that failed: {message or status}"


class Throttle:
    """At most one edit per `interval` seconds per chat (what Telegram accepts)."""

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval
        self.last: dict[str, float] = {}

    def allow(self, chat_id: str) -> bool:
        now = time.monotonic()
        if now - self.last.get(chat_id, 0.0) < self.interval:
            return False
        self.last[chat_id] = now
        return True
