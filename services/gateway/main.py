"""The gateway process: `python -m services.gateway` (what `make run` and compose start)."""

from __future__ import annotations

import asyncio
import logging
import signal
from contextlib import suppress

from services.gateway.client import ApiClient
from services.gateway.context import Gateway
from services.gateway.delivery import Delivery
from services.gateway.registry import Registry, register
from shared.config import Settings, get_settings
from shared.ops.logs import setup_logging

log = logging.getLogger("services.gateway")


async def serve(settings: Settings, stop: asyncio.Event) -> None:
    """Start every configured platform and the outbox, run until `stop` is set, then stop them in reverse."""
    key = settings.gateway_api_key.get_secret_value() if settings.gateway_api_key else ""
    gateway = Gateway(settings, ApiClient(settings.api_url, key))
    gateway.delivery = Delivery(gateway)
    gateway.platforms = register(Registry()).build(gateway)
    started = []
    try:
        for platform in gateway.platforms.values():
            await platform.start()
            started.append(platform)
        outbox = asyncio.create_task(gateway.delivery.run())
        log.info("gateway ready: %s; api at %s", ", ".join(gateway.platforms), settings.api_url)
        await stop.wait()
        outbox.cancel()
        with suppress(asyncio.CancelledError):
            await outbox
    finally:
        for platform in reversed(started):
            try:
                await platform.stop()
            except Exception:
                log.exception("%s did not stop cleanly", platform.name)
        await gateway.api.aclose()


def main() -> int:
    settings = get_settings()
    setup_logging(settings.log_level, settings.log_format, settings.secret_values())
    if settings.gateway_api_key is None or len(settings.gateway_api_key.get_secret_value().strip()) < 16:
        log.error("GATEWAY_API_KEY is missing or shorter than 16 characters (`make run` generates one into .env)")
        return 2

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await serve(settings, stop)

    asyncio.run(run())
    return 0
