"""Delivery through the outbox: a reply is recorded through the api before its first send, and retried with
backoff (the platform's retry-after when it names one) until sent or finally failed; after a restart every
unsent reply is picked up again."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from services.gateway.client import ApiError

if TYPE_CHECKING:
    from services.gateway.context import Gateway

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0


class DeliveryError(Exception):
    """A send that may work later; `retry_in` is the platform's own hint (Telegram 429 retry_after)."""

    def __init__(self, message: str, retry_in: float | None = None) -> None:
        super().__init__(message)
        self.retry_in = retry_in


class Delivery:
    def __init__(self, gateway: "Gateway") -> None:
        self.gateway = gateway
        self.in_flight: set[str] = set()

    async def deliver(self, user_id: str, target: str, chat_id: str, text: str, turn_id: str | None = None,
                      ref: str | None = None) -> None:
        """Record the reply, then try it once now; the outbox loop retries what did not go out."""
        item = await self.gateway.api.outbox_record(user_id, target, chat_id, text, turn_id)
        await self.attempt(item, ref)

    async def attempt(self, item: dict, ref: str | None = None) -> bool:
        if item["id"] in self.in_flight:
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
                await self._report(item["id"], False, str(exc), exc.retry_in)
                return False
            except Exception as exc:  # a platform library's own error: retried like any other
                log.warning("delivery %s to %s failed (%s)", item["id"], kind, type(exc).__name__)
                await self._report(item["id"], False, type(exc).__name__, None)
                return False
            await self._report(item["id"], True, None, None)
            return True
        finally:
            self.in_flight.discard(item["id"])

    async def _report(self, item_id: str, ok: bool, error: str | None, retry_in: float | None) -> None:
        for delay in (0.2, 1.0, 3.0, None):
            try:
                await self.gateway.api.outbox_report(item_id, ok, error, retry_in)
                return
            except (ApiError, OSError, Exception) as exc:
                if delay is None:
                    log.error("could not record delivery %s (%s)", item_id, type(exc).__name__)
                    return
                await asyncio.sleep(delay)

    async def run(self) -> None:
        """Send every due reply, forever (the first pass after start-up resends what a restart left)."""
        while True:
            try:
                for item in await self.gateway.api.outbox_due():
                    asyncio.create_task(self.attempt(item))
            except Exception as exc:
                log.warning("could not read the outbox (%s)", type(exc).__name__)
            await asyncio.sleep(POLL_SECONDS)
