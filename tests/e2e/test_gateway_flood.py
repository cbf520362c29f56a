"""The gateway under an outsider's flood, with the real api, worker and a fake Bot API: made-up webhook route
names from one address never starve the gateway's own work, and callbacks to inside addresses are refused by
default (WEBHOOK_CALLBACK_ALLOW unset here)."""

from __future__ import annotations

import io
import json
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import redirect_stdout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from services.cli.main import main as hstack
from tests.e2e.test_gateway_telegram import paired
from tests.e2e.test_gateway_webhooks import post
from tests.fakes.callback import CallbackServer
from tests.fakes.model import text
from tests.fakes.telegram import FakeTelegram
from tests.support.env import free_port
from tests.support.gateway import gateway_env, start_gateway
from tests.support.processes import Stack
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.once]  # process behaviour: see tests/conftest.py

API_LIMIT = 30  # RATE_LIMIT_PER_MINUTE: low, so a flood that reached the api with the gateway's key would use it up
FLOOD = 400


@pytest.fixture(scope="module")
def stack(fake_model, telegram):
    s = Stack(model_url=fake_model.base_url, env_overrides={**gateway_env(), "RATE_LIMIT_PER_MINUTE": str(API_LIMIT)})
    with s:
        s.start_api()
        s.start_worker()
        s.gateway, s.gateway_port = start_gateway(s, telegram=telegram)
        s.create_user("hooks")
        yield s


def create_route(stack: Stack, name: str, callback: str | None = None) -> tuple[str, str]:
    """`hstack webhooks create`: (the secret it prints once, everything it printed)."""
    args = ["--url", stack.base_url, "--admin-key", stack.admin_key, "webhooks", "create", name, "--user", "hooks"]
    out = io.StringIO()
    with redirect_stdout(out):
        assert hstack(args + (["--callback", callback] if callback else [])) == 0
    return out.getvalue().split("Secret:\n", 1)[1].split()[0], out.getvalue()


def flood(port: int, answers: list[int], started: threading.Event) -> None:
    """Unsigned posts to made-up route names from 127.0.0.1, each claiming another X-Forwarded-For address."""
    def one(client: httpx.Client) -> int:
        forged = f"203.0.113.{secrets.randbelow(250) + 1}"
        try:
            status = client.post(f"http://127.0.0.1:{port}/webhooks/made-up-{secrets.token_hex(6)}",
                                 content=b'{"text": "hi"}', headers={"X-Forwarded-For": forged}).status_code
        except httpx.HTTPError:
            status = 0  # no answer at all
        answers.append(status)
        if len(answers) >= 100:
            started.set()
        return status

    try:
        with httpx.Client(timeout=30, transport=httpx.HTTPTransport(local_address="127.0.0.1")) as client, \
                ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda _n: one(client), range(FLOOD)))
    finally:
        started.set()


def test_a_flood_of_made_up_routes_never_stops_a_chat_or_a_signed_webhook(stack, telegram, model):
    """Reproduction: ~21,000 unsigned posts to random route names in 75 s used up the gateway key's api bucket
    (each was a route lookup); then a signed request to a real route got 500 and a paired Telegram user's
    message was consumed and lost ("No error handlers are registered")."""
    paired(stack, telegram, 5101, "Steady")
    secret, _printed = create_route(stack, "steady")
    model.on("weather during the flood", text("Sunny, flood or not."))
    model.on("signed during the flood", text("Webhook handled."))

    answers: list[int] = []
    started = threading.Event()
    flooding = threading.Thread(target=flood, args=(stack.gateway_port, answers, started), daemon=True)
    flooding.start()
    assert started.wait(120), "the flood got going"
    telegram.user_says(5101, "what is the weather during the flood")
    with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.3"), timeout=30) as own:
        signed = post(stack, "steady", secret, {"text": "signed during the flood"}, client=own)
    flooding.join(180)

    assert signed.status_code == 202, signed.text
    telegram.wait_text(5101, "Sunny, flood or not.", timeout=60)
    wait_until(lambda: any("signed during the flood" in str(r.body) for r in model.requests), timeout=60,
               what="the signed webhook's turn at the model")
    assert len(answers) == FLOOD and set(answers) <= {404, 429}, sorted(set(answers))
    assert answers.count(429) >= FLOOD - 60 - 1, "the flood is refused by its address, X-Forwarded-For or not"
    assert "Traceback" not in stack.gateway.log()


def test_a_callback_to_a_loopback_address_is_refused_by_default_and_the_owner_is_warned(stack):
    """Reproduction: a route's callback URL on a loopback (or link-local) address was accepted silently and the
    reply was POSTed there."""
    callback = CallbackServer().start()
    try:
        secret, printed = create_route(stack, "inside", callback.url)
        assert "Warning: Replies to this callback would be refused" in printed
        with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.4"), timeout=30) as own:
            answer = post(stack, "inside", secret, {"text": "reply to the inside"}, client=own)  # not the flood's
        assert answer.status_code == 202
        turn_id = answer.json()["turn_id"]
        with stack.client() as admin:
            failed = wait_until(lambda: [i for i in admin.get("/v1/admin/outbox", params={"status": "failed"}).json()
                                         if i["turn_id"] == turn_id], timeout=60, what="the refused reply")
        assert "refused" in failed[0]["last_error"] and "loopback" in failed[0]["last_error"]
        assert callback.received == [], "nothing reached the loopback address"
    finally:
        callback.stop()


class RefusingApi:
    """An api that answers every call 429 with a long Retry-After: what the gateway met once its key's bucket
    was used up."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args) -> None:
                pass

            def do_GET(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.dumps({"error": {"code": "rate_limited", "message": "retry in 60 s"}}).encode()
                self.send_response(429)
                for name, value in (("Content-Type", "application/json"), ("Retry-After", "60"),
                                    ("Content-Length", str(len(body)))):
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_message_the_api_cannot_take_now_is_answered_with_try_again_never_dropped(stack):
    """Reproduction: with the api answering 429, a paired user's message was consumed and lost: the handler's
    ApiError went to python-telegram-bot's "No error handlers are registered" and the user heard nothing."""
    refusing, telegram = RefusingApi(), FakeTelegram().start()
    gateway = None
    try:
        gateway, _port = start_gateway(stack, telegram=telegram, GATEWAY_API_URL=refusing.url)
        telegram.user_says(5201, "are you there?")
        assert "please send it again" in telegram.wait_text(5201, "Sorry, I could not take that message")
        assert "No error handlers are registered" not in gateway.log()
    finally:
        if gateway is not None:
            gateway.stop()
        telegram.stop()
        refusing.stop()
