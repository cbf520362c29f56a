"""Signed inbound webhooks on GATEWAY_HOST:GATEWAY_PORT: `POST /webhooks/{name}` starts a turn of the route's
session; the reply goes to the route's callback URL (signed the same way) and/or a Telegram chat.

Outside traffic is bounded before it costs the api anything: requests that do not verify (unknown route, bad
or missing signature, malformed input) count against the client's address; route lookups are cached; only
verified requests count against a route; a verified request is remembered in Redis (through the api) so a
replay is refused by every replica and after a restart.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from services.gateway import signing
from services.gateway.callbacks import CallbackSender
from services.gateway.client import ApiError
from services.gateway.context import Gateway
from services.gateway.conversation import ENDED, reply_text
from services.gateway.delivery import DeliveryError
from services.gateway.route_cache import LookupsExhausted, RouteCache
from services.gateway.webhook_input import Refused, turn_input
from services.gateway.windows import Windows
from shared.security.addresses import AddressRefused, Allowlist

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 256 * 1024
PER_MINUTE = 30
ROUTE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
RETRY_AFTER_SECONDS = 5


def create(gateway: Gateway) -> "WebhookPlatform":
    return WebhookPlatform(gateway)


def refuse(status: int, code: str, message: str, retry_after: int | None = None) -> JSONResponse:
    headers = {"Retry-After": str(retry_after)} if retry_after else None
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


class WebhookPlatform:
    name = "webhook"

    def __init__(self, gateway: Gateway) -> None:
        settings = gateway.settings
        self.gateway = gateway
        self.routes = RouteCache(gateway.api)
        self.hits = Windows(PER_MINUTE, max_keys=4096)
        self.strangers = Windows(settings.webhook_unverified_per_minute)
        self.app = Starlette(routes=[Route("/webhooks/{name:path}", self.receive, methods=["POST"]),
                                     Route("/healthz", self.health, methods=["GET"])])
        proxies = settings.gateway_trusted_proxies.strip()
        config = uvicorn.Config(self.app, host=settings.gateway_host, port=settings.gateway_port,
                                log_level="warning", lifespan="off", proxy_headers=bool(proxies),
                                forwarded_allow_ips=proxies or None)
        self.server = uvicorn.Server(config)
        self.server.install_signal_handlers = lambda: None  # the gateway's main owns the signals
        self.callbacks = CallbackSender(Allowlist.parse(settings.webhook_callback_allow))
        self.task: asyncio.Task | None = None
        self.tasks: set[asyncio.Task] = set()

    async def start(self) -> None:
        self.task = asyncio.create_task(self.server.serve())
        while not self.server.started:
            if self.task.done():
                self.task.result()
                raise RuntimeError("the webhook server stopped while starting")
            await asyncio.sleep(0.02)
        log.info("webhooks: serving on %s:%s", self.gateway.settings.gateway_host, self.gateway.settings.gateway_port)

    async def stop(self) -> None:
        self.server.should_exit = True
        if self.task is not None:
            await self.task
        await self.callbacks.aclose()

    async def health(self, _request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def receive(self, request: Request) -> JSONResponse:
        """Count the request against its address until it verifies; then against its route instead."""
        address = request.client.host if request.client else "unknown"
        if not self.strangers.take(address):
            return refuse(429, "rate_limited", "Too many unverified requests from this address; retry in a minute.",
                          60)
        try:
            verified, response = await self._verified(request)
        except Refused as exc:
            return refuse(exc.status, exc.code, exc.message, 60 if exc.status == 429 else None)
        except (ApiError, httpx.TransportError) as exc:
            log.warning("webhook: the api could not answer (%s)", exc)
            return refuse(503, "unavailable", "The gateway cannot reach the agent right now; retry later.",
                          RETRY_AFTER_SECONDS)
        if verified:
            self.strangers.give_back(address)
        return response

    async def _verified(self, request: Request) -> tuple[bool, JSONResponse]:
        """(whether the request verified, the answer)."""
        name = request.path_params["name"]
        if not ROUTE_NAME.fullmatch(name):
            raise Refused(404, "not_found", "No such webhook route.")
        body = await _read_limited(request)
        if body is None:
            raise Refused(413, "payload_too_large", f"The body is over {MAX_BODY_BYTES} bytes.")
        try:
            route = await self.routes.get(name)
        except LookupsExhausted:
            raise Refused(429, "rate_limited", "The gateway is busy; retry in a minute.") from None
        if route is None:
            raise Refused(404, "not_found", "No such webhook route.")
        ok, reason, signature = signing.verify(route["secret"], request.headers, body, time.time())
        if not ok:
            raise Refused(401, "unauthorized", f"The request is not signed right: {reason}.")
        if self.hits.full(name):
            return True, refuse(429, "rate_limited", f"More than {PER_MINUTE} requests a minute on this route.", 60)
        keys, ttl = signing.replay_keys(request.headers, signature)
        if not await self.gateway.api.webhook_first_delivery(name, keys, ttl):  # a replay counts as unverified
            return False, refuse(409, "replayed", "This signed request was already received.")
        self.hits.take(name)
        try:
            return True, await self._start_turn(route, body)
        except Refused as exc:
            return True, refuse(exc.status, exc.code, exc.message)

    async def _start_turn(self, route: dict, body: bytes) -> JSONResponse:
        text, chat_id = turn_input(body, self.gateway.settings.max_input_bytes)
        key = f"webhook:{route['name']}:{chat_id or '-'}"
        try:
            session_id = await self.gateway.api.chat_session(route["user_id"], key)
            turn = await self.gateway.api.create_turn(route["user_id"], session_id, text)
        except ApiError as exc:
            if exc.status in (400, 409, 413, 422):  # the api's own refusal of this input
                raise Refused(exc.status, exc.code, "The agent refused this payload.") from exc
            raise
        slots = [await self.gateway.delivery.expect(route["user_id"], target, dest, turn["id"])
                 for target, dest in _destinations(route, chat_id)]
        task = asyncio.create_task(self._reply(route, turn["id"], slots))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return JSONResponse({"turn_id": turn["id"], "session_id": session_id}, status_code=202)

    async def _reply(self, route: dict, turn_id: str, slots: list[dict]) -> None:
        """Wait for the turn, then fill in and send the reply recorded for each of the route's destinations."""
        delivery = self.gateway.delivery
        try:
            async for _event in self.gateway.api.events(route["user_id"], turn_id):
                pass
            done = await self.gateway.api.turn(route["user_id"], turn_id)
            if done.get("status") in ENDED:  # else the stream gave up early: the outbox loop waits for the end
                for slot in slots:
                    await delivery.complete(slot, reply_text(done))
        except Exception:
            log.exception("webhook %s: the reply to turn %s was not handed over", route["name"], turn_id)
        finally:
            for _slot in slots:
                delivery.release(turn_id)

    async def send(self, dest: str, item: dict, ref: str | None = None) -> None:
        """POST the reply to the route's callback URL, signed with the route's secret, if its address is allowed."""
        try:
            route = await self.routes.get(dest)
        except (ApiError, LookupsExhausted) as exc:
            raise DeliveryError(f"route {dest} unavailable ({type(exc).__name__})") from exc
        if route is None or not route.get("callback_url"):
            raise DeliveryError(f"route {dest} has no callback URL")
        body = json.dumps({"chat_id": item.get("chat_id") or None, "text": item["text"],
                           "turn_id": item.get("turn_id")}).encode()
        try:
            response = await self.callbacks.post(route["callback_url"], body,
                                                  signing.signed_headers(route["secret"], body))
        except AddressRefused as exc:  # the operator's allow list decides: retrying would not change it
            raise DeliveryError(f"callback refused: {exc}", final=True) from exc
        except httpx.HTTPError as exc:
            raise DeliveryError(f"callback unreachable ({type(exc).__name__})") from exc
        if response.status_code >= 300:
            retry = response.headers.get("Retry-After", "")
            raise DeliveryError(f"callback answered {response.status_code}",
                                float(retry) if retry.isdigit() and len(retry) < 7 else None)


def _destinations(route: dict, chat_id: str) -> list[tuple[str, str]]:
    """(outbox target, chat id) for each place the route's replies go."""
    found = [(f"callback:{route['name']}", chat_id)] if route.get("callback_url") else []
    if route.get("deliver"):
        found.append((route["deliver"], route["deliver"].partition(":")[2]))
    return found


async def _read_limited(request: Request) -> bytes | None:
    """The raw body, or None past MAX_BODY_BYTES (read no further than that)."""
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            return None
    return bytes(body)
