"""Delivery through the outbox: a reply is recorded through the api before its first send, and retried with
backoff (the platform's retry-after when it names one) until sent or finally failed; after a restart every
unsent reply is picked up again. A file the agent sends (send_file) is an item of its own, recorded by the worker
with its caption as text: the loop sends it as soon as it is due, whether or not its turn still runs.

A reply to a turn is recorded when the turn starts (no text yet). The conversation that runs the turn fills
in the text and sends that same item; after a restart nobody runs it, so the outbox loop asks the api how the
turn ended and fills it in, and a turn that is gone marks its reply failed."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from typing import TYPE_CHECKING

from services.gateway.client import ApiError
from services.gateway.conversation import ENDED, reply_text

if TYPE_CHECKING:
    from services.gateway.context import Gateway

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0
AWAITING_POLL_SECONDS = 5.0
REMEMBER_FINISHED = 2000


class DeliveryError(Exception):
    """A send that may work later; `retry_in` is the platform's own hint (Telegram 429 retry_after); a `final`
    one never will (the reply fails at once)."""

    def __init__(self, message: str, retry_in: float | None = None, *, final: bool = False) -> None:
        super().__init__(message)
        self.retry_in, self.final = retry_in, final


class Delivery:
    def __init__(self, gateway: "Gateway") -> None:
        self.gateway = gateway
        self.in_flight: set[str] = set()
        self.live: dict[str, int] = {}  # turns this process runs and fills itself: the loop leaves their replies
        self.finished: OrderedDict[str, None] = OrderedDict()  # reported here: a stale `due` list never resends

    async def expect(self, user_id: str, target: str, chat_id: str, turn_id: str) -> dict:
        """Record the reply to a turn as it starts (no text yet), so a restart mid-turn still delivers it; a slot
        for `complete`. Without the api the slot has no id and `complete` records the reply at the end."""
        self.live[turn_id] = self.live.get(turn_id, 0) + 1
        slot = {"id": None, "user_id": user_id, "target": target, "chat_id": chat_id, "turn_id": turn_id}
        try:
            slot.update(await self.gateway.api.outbox_record(user_id, target, chat_id, None, turn_id))
        except Exception as exc:
            log.warning("the reply to turn %s was not recorded at its start (%s)", turn_id, type(exc).__name__)
        return slot

    def release(self, turn_id: str) -> None:
        """The conversation is done with the turn; whatever it left unfilled is the loop's now."""
        left = self.live.get(turn_id, 0) - 1
        if left > 0:
            self.live[turn_id] = left
        else:
            self.live.pop(turn_id, None)

    async def complete(self, slot: dict, text: str, ref: str | None = None) -> None:
        """Fill in the ended turn's reply and send that same item (never a second one)."""
        if slot.get("id") is None:
            await self.deliver(slot["user_id"], slot["target"], slot["chat_id"], text, slot["turn_id"], ref)
            return
        filled = await self.gateway.api.outbox_fill(slot["id"], text)
        if filled["status"] == "pending":
            await self.attempt(filled, ref)

    async def deliver(self, user_id: str, target: str, chat_id: str, text: str, turn_id: str | None = None,
                      ref: str | None = None) -> None:
        """Record the reply, then try it once now; the outbox loop retries what did not go out."""
        item = await self.gateway.api.outbox_record(user_id, target, chat_id, text, turn_id)
        await self.attempt(item, ref)

    async def attempt(self, item: dict, ref: str | None = None) -> bool:
        if item["id"] in self.in_flight or item["id"] in self.finished or item.get("text") is None:
            return False
        self.in_flight.add(item["id"])
        try:
            kind, _, dest = item["target"].partition(":")
            platform = self.gateway.platforms.get("webhook" if kind == "callback" else kind)
            try:
                if platform is None:
                    raise DeliveryError(f"platform {kind} is not running")
                await platform.send(dest, item, ref)
            except DeliveryError as exc:
                log.warning("delivery %s to %s failed: %s", item["id"], kind, exc)
                await self._report(item["id"], False, str(exc), exc.retry_in, give_up=exc.final)
                return False
            except Exception as exc:  # a platform library's own error: retried like any other
                log.warning("delivery %s to %s failed (%s)", item["id"], kind, type(exc).__name__)
                await self._report(item["id"], False, type(exc).__name__, None)
                return False
            await self._report(item["id"], True, None, None)
            self.finished[item["id"]] = None
            while len(self.finished) > REMEMBER_FINISHED:
                self.finished.popitem(last=False)
            return True
        finally:
            self.in_flight.discard(item["id"])

    async def _report(self, item_id: str, ok: bool, error: str | None, retry_in: float | None,
                      give_up: bool = False) -> None:
        for delay in (0.2, 1.0, 3.0, None):
            try:
                await self.gateway.api.outbox_report(item_id, ok, error, retry_in, give_up)
                return
            except (ApiError, OSError, Exception) as exc:
                if delay is None:
                    log.error("could not record delivery %s (%s)", item_id, type(exc).__name__)
                    return
                await asyncio.sleep(delay)

    async def run(self) -> None:
        """Send every due reply and settle replies to turns nobody here runs, forever (the first pass after
        start-up picks up what a restart left: unsent replies, and replies to turns that were running)."""
        look_again = 0.0
        while True:
            if time.monotonic() >= look_again:
                look_again = time.monotonic() + AWAITING_POLL_SECONDS
                try:
                    await self.settle_awaiting()
                except Exception as exc:
                    log.warning("could not settle awaited replies (%s)", type(exc).__name__)
            try:
                for item in await self.gateway.api.outbox_due():
                    # A turn's text reply is its conversation's to send (editing its preview); a file goes now
                    if item.get("attachment_id") or item.get("turn_id") not in self.live:
                        asyncio.create_task(self.attempt(item))
            except Exception as exc:
                log.warning("could not read the outbox (%s)", type(exc).__name__)
            await asyncio.sleep(POLL_SECONDS)

    async def settle_awaiting(self) -> None:
        """Replies recorded at a turn's start that no conversation here will fill: take how the turn ended."""
        for item in await self.gateway.api.outbox_awaiting():
            if item.get("turn_id") not in self.live:
                await self.settle(item)

    async def settle(self, item: dict) -> None:
        """An ended turn's reply is filled in (the due pass sends it); a running one is looked at again later;
        a turn that is gone (or no longer this user's to read) fails the reply for good."""
        try:
            turn = await self.gateway.api.turn(item["user_id"], item["turn_id"]) if item.get("turn_id") else None
        except ApiError as exc:
            if exc.status not in (403, 404):
                return
            turn = None
        if turn is None:
            await self._report(item["id"], False, "the turn of this reply is gone", None, give_up=True)
        elif turn.get("status") in ENDED:
            await self.gateway.api.outbox_fill(item["id"], reply_text(turn))
