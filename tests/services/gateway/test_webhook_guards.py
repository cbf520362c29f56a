"""What keeps outside webhook traffic cheap and harmless: per-key windows in a bounded table, the route cache,
strict signature headers, malformed payloads refused with stable codes, callbacks only to allowed addresses."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from services.gateway import signing
from services.gateway.callbacks import CallbackSender
from services.gateway.client import ApiError
from services.gateway.route_cache import LookupsExhausted, RouteCache
from services.gateway.webhook_input import Refused, turn_input
from services.gateway.windows import Windows
from shared.security.addresses import AddressRefused, Allowlist
from tests.fakes.callback import CallbackServer

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py


def test_windows_count_per_key_give_back_and_forget_the_least_recent_keys():
    """Reproduction: the per-route-name hit table grew by one entry per made-up name, without bound."""
    windows = Windows(2, max_keys=100)
    assert windows.take("a") and windows.take("a") and not windows.take("a") and windows.full("a")
    windows.give_back("a")
    assert windows.take("a"), "a hit given back frees its place"
    for n in range(10_000):
        windows.take(f"rotating-{n}")
    assert len(windows.hits) == 100


class CountingApi:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def webhook_route(self, name: str) -> dict:
        self.asked.append(name)
        await asyncio.sleep(0)
        if name != "real":
            raise ApiError(404, "webhook_not_found")
        return {"name": "real", "secret": "s"}


def test_route_lookups_are_cached_unknown_names_too_and_concurrent_ones_share_one_call():
    """Reproduction: every request to an unknown route name was one more api call with the gateway's key."""
    async def scenario():
        api = CountingApi()
        cache = RouteCache(api, max_names=50)
        found = await asyncio.gather(*(cache.get("real") for _ in range(20)), *(cache.get("ghost") for _ in range(20)))
        assert found[:20] == [{"name": "real", "secret": "s"}] * 20 and found[20:] == [None] * 20
        assert sorted(api.asked) == ["ghost", "real"], "one api call per name"
        for n in range(200):
            await cache.get(f"rotating-{n}")
        assert len(cache.missing) == 50 and "real" in cache.found, "made-up names never push a real route out"
    asyncio.run(scenario())


def test_past_the_lookup_budget_a_known_route_is_served_as_last_seen_and_other_names_are_refused():
    """Reproduction: made-up names from many addresses (each within its own limit) made one api call each, as
    fast as they came (20,000 over 100 loopback addresses: 20,000 lookups, one of them a 503)."""
    async def scenario():
        api = CountingApi()
        cache = RouteCache(api, ttl=0.0, per_minute=5)
        assert await cache.get("real") is not None
        for n in range(4):
            assert await cache.get(f"rotating-{n}") is None
        with pytest.raises(LookupsExhausted):
            await cache.get("rotating-new")
        assert await cache.get("real") == {"name": "real", "secret": "s"}, "served as last seen"
        assert len(api.asked) == 5
    asyncio.run(scenario())


@pytest.mark.parametrize("stamp", ["1" * 400, "١٧٠٠٠٠٠٠٠٠", "²", " ", "-5", "1e9"])
def test_a_malformed_timestamp_is_a_refusal_not_a_crash(stamp):
    """Reproduction: a 400-digit or non-ASCII-digit X-Webhook-Timestamp raised in the gateway (500)."""
    headers = {signing.TIMESTAMP_HEADER: stamp, signing.SIGNATURE_HEADER: "0" * 64}
    assert signing.verify("secret", headers, b"{}", time.time()) == (False, "missing or malformed timestamp", "")


@pytest.mark.parametrize("given", ["é" * 64, "zz", "0" * 65])
def test_a_signature_that_is_not_a_hex_digest_does_not_verify(given):
    """Reproduction: a non-ASCII signature made hmac.compare_digest raise TypeError (500)."""
    stamp = str(int(time.time()))
    assert not signing.verify("s", {signing.TIMESTAMP_HEADER: stamp, signing.SIGNATURE_HEADER: given}, b"", time.time())[0]
    assert not signing.verify("s", {signing.GITHUB_HEADER: f"sha256={given}"}, b"", time.time())[0]


def test_github_deliveries_are_remembered_for_days_by_signature_and_delivery_id():
    """Reproduction: a GitHub-style request (no timestamp) was accepted again 674 s later."""
    keys, ttl = signing.replay_keys({signing.GITHUB_HEADER: "sha256=ab", signing.GITHUB_DELIVERY_HEADER: "d-1"}, "ab")
    assert keys == ["sig:ab", "delivery:d-1"] and ttl >= 24 * 3600
    keys, ttl = signing.replay_keys({signing.SIGNATURE_HEADER: "cd"}, "cd")
    assert keys == ["sig:cd"] and ttl > 2 * signing.MAX_SKEW_SECONDS


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize("body, status, code", [
    (nested(100_000), 400, "payload_too_deep"),
    (json.dumps({"text": "a\u0000b"}).encode(), 400, "invalid_text"),
    (b'{"text": "lone \\ud800 surrogate"}', 400, "invalid_text"),
    (b'{"text": "hi", "chat_id": "x\\u0000"}', 400, "invalid_text"),
    (b"raw \x00 bytes", 400, "invalid_text"),
    (json.dumps([1] * 60_000).encode(), 413, "payload_too_large"),
])
def test_malformed_payloads_are_refused_with_stable_codes(body, status, code):
    """Reproduction: with the route's secret, deeply nested JSON, NUL or a lone surrogate, or a body whose fenced
    form passed the api's body limit each made the gateway answer 500."""
    assert len(body) <= 256 * 1024
    with pytest.raises(Refused) as refused:
        turn_input(body, 256 * 1024)
    assert (refused.value.status, refused.value.code) == (status, code)


def test_plain_and_other_payloads_still_make_turns():
    assert turn_input(b'{"text": "hi", "chat_id": 7}', 1000) == ("hi", "7")
    text, chat = turn_input(b'{"action": "```done```"}', 1000)
    assert chat == "" and "```json" in text and "ˋˋˋdoneˋˋˋ" in text


def test_a_callback_to_loopback_is_refused_unless_allowed_and_goes_to_the_checked_address():
    """Reproduction: replies were POSTed to loopback and link-local callback URLs with no check."""
    callback = CallbackServer().start()
    url = f"http://localhost:{callback.port}/hook"

    async def post(allow: str):
        sender = CallbackSender(Allowlist.parse(allow))
        try:
            return await sender.post(url, b"{}", {"Content-Type": "application/json"})
        finally:
            await sender.aclose()
    try:
        with pytest.raises(AddressRefused):
            asyncio.run(post(""))
        assert callback.received == [], "nothing was sent"
        assert asyncio.run(post("127.0.0.1")).status_code == 200
        headers, _body = callback.received[0]
        assert headers["Host"] == f"localhost:{callback.port}", "the URL's host is kept while the address is pinned"
    finally:
        callback.stop()
