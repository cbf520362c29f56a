"""The api side of the gateway under outside traffic: its own calls are never rate limited, replayed webhook
requests are recognised in Redis, pairing requests can be refused without their codes, and a webhook route
whose callback would be refused says so when it is created."""

from __future__ import annotations

import secrets
import uuid

import httpx
import pytest

from services.api.main import create_app
from shared.stores import pairing
from tests.services.api.helpers import error_of
from tests.services.api.test_gateway_rights import gw
from tests.support.factories import make_user
from tests.support.live import serve_api

LIMIT = 5


@pytest.fixture(scope="module")
def limited_api(settings):
    custom = settings.model_copy(update={"rate_limit_per_minute": LIMIT, "turn_rate_limit_per_minute": LIMIT,
                                         "broker_key_prefix": f"gwo-{uuid.uuid4().hex[:8]}:"})
    app = create_app(custom)
    app.state.enqueue = lambda name, payload: None
    with serve_api(app) as base_url, httpx.Client(base_url=base_url, timeout=20) as http:
        yield http


def test_the_gateways_own_calls_are_never_rate_limited_but_its_calls_for_a_user_are(limited_api, db):
    """Reproduction: ~21,000 lookups of made-up webhook routes used up the gateway key's bucket; from then on
    every gateway call (who is this Telegram user, which route, the outbox) was 429 and the gateway stopped."""
    lookups = [limited_api.get(f"/v1/gateway/webhooks/nope-{n}", headers=gw()) for n in range(3 * LIMIT)]
    assert {r.status_code for r in lookups} == {404}
    ask = {"platform": f"t{secrets.token_hex(3)}", "platform_user_id": "1", "display_name": "X"}
    assert limited_api.post("/v1/gateway/identities", json=ask, headers=gw()).status_code == 200

    user = make_user(db)
    pairing.bind(db, "telegram", secrets.token_hex(4), user.id, "U")
    acting = [limited_api.get("/v1/sessions", headers=gw(user.id)).status_code for _ in range(LIMIT + 1)]
    assert acting[:LIMIT] == [200] * LIMIT and acting[LIMIT] == 429, "acting for a user still counts for that user"


def test_a_delivery_is_first_once_then_a_replay_for_its_lifetime(client):
    """Reproduction: replays were remembered in one gateway process's memory, so a restart (or a second replica)
    accepted a replayed request; the api now remembers them in Redis for the gateway."""
    route, mark = f"r{secrets.token_hex(3)}", f"sig:{secrets.token_hex(32)}"
    claim = {"keys": [mark], "ttl_seconds": 60}
    first = client.post(f"/v1/gateway/webhooks/{route}/deliveries", json=claim, headers=gw())
    again = client.post(f"/v1/gateway/webhooks/{route}/deliveries", json=claim, headers=gw())
    assert first.json() == {"first": True} and again.json() == {"first": False}
    other_route = client.post(f"/v1/gateway/webhooks/{route}x/deliveries", json=claim, headers=gw())
    assert other_route.json() == {"first": True}, "each route has its own marks"
    github = {"keys": [f"sig:{secrets.token_hex(32)}", "delivery:abc-" + route], "ttl_seconds": 86400}
    assert client.post(f"/v1/gateway/webhooks/{route}/deliveries", json=github, headers=gw()).json()["first"]
    redelivered = {"keys": [f"sig:{secrets.token_hex(32)}", "delivery:abc-" + route], "ttl_seconds": 86400}
    assert not client.post(f"/v1/gateway/webhooks/{route}/deliveries", json=redelivered,
                           headers=gw()).json()["first"], "a known delivery id is a replay whatever its signature"
    assert client.post(f"/v1/gateway/webhooks/{route}/deliveries", json=claim).status_code == 401


def test_the_owner_denies_pending_requests_by_id_or_platform_user_without_their_codes(client, admin_headers):
    """Reproduction: `POST /v1/admin/pairing/deny` needed the code, which the list never shows: three throwaway
    requests could not be cleared by the owner."""
    platform = f"t{secrets.token_hex(3)}"
    for n in ("1", "2"):
        ask = {"platform": platform, "platform_user_id": n, "display_name": f"spam{n}"}
        assert client.post("/v1/gateway/identities", json=ask, headers=gw()).json()["status"] == "code"
    listed = [p for p in client.get("/v1/admin/pairing", headers=admin_headers).json()["pending"]
              if p["platform"] == platform]
    first = next(p for p in listed if p["platform_user_id"] == "1")
    by_id = client.post("/v1/admin/pairing/deny", headers=admin_headers,
                        json={"platform": platform, "request_id": first["id"]})
    assert by_id.status_code == 200 and by_id.json()["platform_user_id"] == "1"
    by_user = client.post("/v1/admin/pairing/deny", headers=admin_headers,
                          json={"platform": platform, "platform_user_id": "2"})
    assert by_user.status_code == 200 and by_user.json()["display_name"] == "spam2"
    gone = client.post("/v1/admin/pairing/deny", headers=admin_headers,
                       json={"platform": platform, "request_id": first["id"]})
    assert gone.status_code == 404 and error_of(gone)["code"] == "pairing_request_unknown"
    both = client.post("/v1/admin/pairing/deny", headers=admin_headers,
                       json={"platform": platform, "request_id": first["id"], "code": "ABCDEFGH"})
    assert both.status_code == 422, "exactly one of code, request id or platform user id"


def test_identifying_without_asking_for_a_code_creates_no_pairing_request(client, admin_headers):
    """Reproduction: pressing someone else's approval button identified the presser the way a message does, and
    silently created a pending pairing request for them."""
    platform = f"t{secrets.token_hex(3)}"
    ask = {"platform": platform, "platform_user_id": "9", "display_name": "Presser", "request_code": False}
    answer = client.post("/v1/gateway/identities", json=ask, headers=gw())
    assert answer.status_code == 200 and answer.json()["status"] == "unknown" and answer.json()["code"] is None
    listed = client.get("/v1/admin/pairing", headers=admin_headers).json()["pending"]
    assert not [p for p in listed if p["platform"] == platform]


def test_creating_a_route_whose_callback_would_be_refused_says_so(client, admin_headers, db):
    """Reproduction: a callback on a loopback or link-local address was accepted silently and POSTed to."""
    user = make_user(db)
    for url in ("http://127.0.0.1:9/hook", "http://169.254.169.254/latest/meta-data", "http://[::1]/x"):
        created = client.post("/v1/admin/webhooks", headers=admin_headers,
                              json={"name": f"w{secrets.token_hex(4)}", "user": user.name, "callback_url": url})
        assert created.status_code == 201
        assert "would be refused" in created.json()["warning"] and "WEBHOOK_CALLBACK_ALLOW" in created.json()["warning"]
    plain = client.post("/v1/admin/webhooks", headers=admin_headers,
                        json={"name": f"w{secrets.token_hex(4)}", "user": user.name})
    assert plain.json()["warning"] is None
