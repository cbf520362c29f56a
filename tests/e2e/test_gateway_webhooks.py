"""Signed webhooks through the real gateway, api and worker: replies reach the callback signed, refusals hold,
and a callback that is down for a while still gets its reply (the outbox)."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import signal
import threading
import time
from contextlib import redirect_stdout

import httpx
import pytest

from services.cli.main import main as hstack
from services.gateway.signing import sign
from tests.fakes.callback import CallbackServer
from tests.fakes.model import text, tool_call
from tests.support.gateway import gateway_env, start_gateway
from tests.support.processes import Stack
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.once]  # process behaviour: see tests/conftest.py


@pytest.fixture(scope="module")
def stack(fake_model):
    # a refused callback is retried after 0.05 s, 0.1 s, 0.2 s ... instead of 1 s, 2 s, 4 s ...; callbacks here
    # are on loopback, which the operator allows; every test posts from 127.0.0.1, refusals included
    overrides = {**gateway_env(), "OUTBOX_BACKOFF_BASE_SECONDS": "0.05", "OUTBOX_BACKOFF_MAX_SECONDS": "0.2",
                 "WEBHOOK_CALLBACK_ALLOW": "127.0.0.1", "WEBHOOK_UNVERIFIED_PER_MINUTE": "1000"}
    s = Stack(model_url=fake_model.base_url, env_overrides=overrides)
    with s:
        s.start_api()
        s.start_worker()
        s.gateway, s.gateway_port = start_gateway(s)
        s.create_user("hooks")
        yield s


def create_route(stack: Stack, name: str, callback: str | None = None) -> str:
    """`hstack webhooks create`; the secret it prints once."""
    args = ["--url", stack.base_url, "--admin-key", stack.admin_key, "webhooks", "create", name, "--user", "hooks"]
    out = io.StringIO()
    with redirect_stdout(out):
        assert hstack(args + (["--callback", callback] if callback else [])) == 0
    return out.getvalue().split("Secret:\n", 1)[1].split()[0]


def post(stack: Stack, name: str, secret: str, body: dict | bytes, *, ts: int | str | None = None,
         signature: str | None = None, client: httpx.Client | None = None) -> httpx.Response:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    stamp = str(ts if ts is not None else int(time.time()))
    headers = {"X-Webhook-Timestamp": stamp, "Content-Type": "application/json",
               "X-Webhook-Signature-V2": signature if signature is not None else sign(secret, stamp, raw)}
    url = f"http://127.0.0.1:{stack.gateway_port}/webhooks/{name}"
    if client is not None:
        return client.post(url, content=raw, headers=headers)
    return httpx.post(url, content=raw, headers=headers, timeout=30)


def post_github(stack: Stack, name: str, secret: str, body: bytes, delivery: str) -> httpx.Response:
    """A GitHub-style request: sha256= HMAC of the body alone, no timestamp, a delivery id."""
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return httpx.post(f"http://127.0.0.1:{stack.gateway_port}/webhooks/{name}", content=body, timeout=30,
                      headers={"X-Hub-Signature-256": signature, "X-GitHub-Delivery": delivery})


def verifies(secret: str, headers: dict, body: bytes) -> bool:
    stamp = headers.get("X-Webhook-Timestamp", "")
    expected = hmac.new(secret.encode(), f"{stamp}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, headers.get("X-Webhook-Signature-V2", ""))


def test_a_signed_request_gets_a_signed_reply_at_the_callback(stack, model):
    model.on("garage door", text("The garage door is closed."))
    callback = CallbackServer().start()
    try:
        secret = create_route(stack, "home", callback.url)
        answer = post(stack, "home", secret, {"text": "is the garage door open?", "chat_id": "kitchen"})
        assert answer.status_code == 202 and answer.json()["turn_id"]
        wait_until(lambda: callback.received, timeout=30, what="the callback")
        headers, body = callback.received[0]
        assert verifies(secret, headers, body)
        assert json.loads(body) == {"chat_id": "kitchen", "text": "The garage door is closed.",
                                    "turn_id": answer.json()["turn_id"]}
    finally:
        callback.stop()


def test_a_webhook_turn_cannot_call_the_terminal(stack, model):
    """Reproduction: a signed payload talks the model into `terminal`; the route was created without toolsets."""
    model.on("disk usage", tool_call([("terminal", {"command": "touch pwned"})]), text("I could not run it."))
    callback = CallbackServer().start()
    try:
        secret = create_route(stack, "ops", callback.url)
        answer = post(stack, "ops", secret, {"text": "report disk usage", "chat_id": "c1"})
        assert answer.status_code == 202
        wait_until(lambda: callback.received, timeout=30, what="the callback")
        assert json.loads(callback.received[0][1])["text"] == "I could not run it."
    finally:
        callback.stop()
    asked = [r for r in model.requests if "report disk usage" in str(r.body)]
    assert asked and all("terminal" not in {t["function"]["name"] for t in r.body.get("tools") or []} for r in asked)
    assert "Unknown tool 'terminal'" in asked[-1].body["messages"][-1]["content"]


def test_bad_signature_stale_timestamp_replay_size_are_refused(stack):
    secret = create_route(stack, "strict")
    body = {"text": "hello", "chat_id": "x"}
    assert post(stack, "strict", secret, body, signature="0" * 64).status_code == 401
    assert post(stack, "strict", "wrong-secret", body).status_code == 401
    assert post(stack, "strict", secret, body, ts=int(time.time()) - 301).status_code == 401
    missing = httpx.post(f"http://127.0.0.1:{stack.gateway_port}/webhooks/strict", json=body, timeout=10)
    assert missing.status_code == 401
    stamp = int(time.time())
    assert post(stack, "strict", secret, body, ts=stamp).status_code == 202
    assert post(stack, "strict", secret, body, ts=stamp).status_code == 409, "the same signature twice"
    big = json.dumps({"text": "x" * (256 * 1024)}).encode()
    assert post(stack, "strict", secret, big).status_code == 413


def test_unsigned_requests_never_silence_a_route_and_only_verified_ones_count_against_it(stack):
    """Reproduction: the route's 30 a minute were charged before the signature was checked, so 30 unsigned
    requests from anyone made the route refuse its real sender (429) for a minute."""
    secret = create_route(stack, "busy")
    codes = [post(stack, "busy", secret, b"{not json", signature="bad").status_code for _ in range(40)]
    assert codes == [401] * 40
    signed = [post(stack, "busy", secret, {"text": f"ping {n}"}).status_code for n in range(31)]
    assert signed[:30] == [202] * 30 and signed[30] == 429, "30 verified requests a minute"


def test_a_signed_request_replayed_after_a_gateway_restart_is_refused(stack):
    """Reproduction: replay protection lived in the gateway's memory; the same signed request sent again after a
    restart started a second turn (and a second reply)."""
    secret = create_route(stack, "once")
    stamp = int(time.time())
    assert post(stack, "once", secret, {"text": "only once"}, ts=stamp).status_code == 202
    stack.gateway.signal(signal.SIGKILL)
    stack.gateway.popen.wait(10)
    stack.gateway, stack.gateway_port = start_gateway(stack, port=stack.gateway_port)
    replayed = post(stack, "once", secret, {"text": "only once"}, ts=stamp)
    assert replayed.status_code == 409 and replayed.json()["error"]["code"] == "replayed"


def test_a_github_delivery_is_accepted_once_by_signature_and_by_delivery_id(stack):
    """Reproduction: a GitHub-style request (no timestamp) was accepted again once 660 s had passed, and a
    redelivery was only recognised by its signature, in memory."""
    secret = create_route(stack, "github")
    body = json.dumps({"action": "opened", "number": 1}).encode()
    assert post_github(stack, "github", secret, body, "d-1").status_code == 202
    assert post_github(stack, "github", secret, body, "d-2").status_code == 409, "the same signature"
    other = json.dumps({"action": "opened", "number": 2}).encode()
    assert post_github(stack, "github", secret, other, "d-1").status_code == 409, "the same delivery id"
    from redis import Redis
    redis = Redis.from_url(stack.env["REDIS_URL"])
    keys = list(redis.scan_iter(f"{stack.env.get('BROKER_KEY_PREFIX', '')}webhook:seen:github:*"))
    assert len(keys) >= 2 and min(redis.ttl(k) for k in keys) >= 24 * 3600, "kept in Redis for at least a day"


def test_malformed_requests_get_4xx_with_stable_codes_never_500(stack):
    """Reproduction: each of these made the gateway answer 500: a 400-digit or non-ASCII-digit timestamp (no
    secret needed), %00 in the route name, and with the secret deeply nested JSON, NUL or a lone surrogate in
    the text, and a payload whose fenced form passed the api's body limit."""
    secret = create_route(stack, "fussy")
    for stamp in (b"9" * 400, "¹²³".encode("latin-1")):  # latin-1 digits: str.isdigit() says yes, int() says no
        answer = httpx.post(f"http://127.0.0.1:{stack.gateway_port}/webhooks/fussy", content=b"{}", timeout=30,
                            headers={"X-Webhook-Timestamp": stamp, "X-Webhook-Signature-V2": "0" * 64})
        assert (answer.status_code, answer.json()["error"]["code"]) == (401, "unauthorized")
    nul_name = httpx.post(f"http://127.0.0.1:{stack.gateway_port}/webhooks/fussy%00", content=b"{}", timeout=30)
    assert (nul_name.status_code, nul_name.json()["error"]["code"]) == (404, "not_found")
    for body, status, code in ((b"[" * 50_000 + b"]" * 50_000, 400, "payload_too_deep"),
                               (b'{"text": "nul \u0000 here"}', 400, "invalid_text"),
                               (b'{"text": "lone \udc00 here"}', 400, "invalid_text"),
                               (json.dumps([1] * 60_000).encode(), 413, "payload_too_large")):
        answer = post(stack, "fussy", secret, body)
        assert (answer.status_code, answer.json()["error"]["code"]) == (status, code), body[:40]


def test_a_callback_down_for_several_attempts_still_gets_the_reply(stack, model):
    model.on("water the plants", text("Watering started."))
    callback = CallbackServer()
    secret = create_route(stack, "garden", callback.url)
    answer = post(stack, "garden", secret, {"text": "water the plants"})
    assert answer.status_code == 202
    with stack.client() as admin:
        # the callback server stays down until two deliveries were refused: this is the scenario
        wait_until(lambda: any(i["turn_id"] == answer.json()["turn_id"] and i["attempts"] >= 2
                               for i in admin.get("/v1/admin/outbox", params={"status": "pending"}).json()),
                   timeout=30, what="two failed attempts")
    callback.start()
    try:
        wait_until(lambda: callback.received, timeout=60, what="the redelivered reply")
        headers, body = callback.received[0]
        assert verifies(secret, headers, body) and json.loads(body)["text"] == "Watering started."
    finally:
        callback.stop()


def test_any_other_json_reaches_the_agent_as_a_fenced_payload(stack, model):
    secret = create_route(stack, "ci")
    answer = post(stack, "ci", secret, {"action": "completed", "repo": "x/y"})
    assert answer.status_code == 202
    wait_until(lambda: any("```json" in json.dumps(r.body) and "x/y" in json.dumps(r.body) for r in model.requests),
               timeout=30, what="the fenced payload at the model")


def test_a_reply_to_a_turn_running_when_the_gateway_is_killed_reaches_the_callback_once(stack, model):
    release = threading.Event()  # the model answers once the gateway was killed and is back: no fixed latency

    def answer_when_released(body: dict):
        release.wait(60)
        return text("The slow report is ready.")

    model.on("slow report", answer_when_released)
    callback = CallbackServer().start()
    try:
        secret = create_route(stack, "slowpoke", callback.url)
        answer = post(stack, "slowpoke", secret, {"text": "write the slow report", "chat_id": "desk"})
        assert answer.status_code == 202
        turn_id = answer.json()["turn_id"]
        wait_until(lambda: any("slow report" in json.dumps(r.body) for r in model.requests),
                   timeout=30, what="the turn at the model")
        stack.gateway.signal(signal.SIGKILL)
        stack.gateway.popen.wait(10)
        stack.gateway, stack.gateway_port = start_gateway(stack, port=stack.gateway_port)
        release.set()
        wait_until(lambda: callback.received, timeout=60, what="the reply at the callback")
        with stack.client() as admin:
            wait_until(lambda: [i for i in admin.get("/v1/admin/outbox", params={"status": "sent"}).json()
                                if i["turn_id"] == turn_id], timeout=30, what="the reply marked sent")
        headers, body = callback.received[0]
        assert verifies(secret, headers, body)
        assert json.loads(body) == {"chat_id": "desk", "text": "The slow report is ready.", "turn_id": turn_id}
        assert len(callback.received) == 1, "delivered exactly once"
    finally:
        callback.stop()
