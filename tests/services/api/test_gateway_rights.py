"""The gateway's key: acts only for users bound by pairing or a webhook route, on the routes a chat needs."""

from __future__ import annotations

import secrets

from shared.stores import pairing, webhook_routes
from tests.services.api.helpers import error_of
from tests.support.factories import make_user

GATEWAY_KEY = "test-gateway-key-0123456789"


def gw(user_id: str | None = None) -> dict:
    headers = {"Authorization": f"Bearer {GATEWAY_KEY}"}
    if user_id:
        headers["X-Act-As-User"] = user_id
    return headers


def test_the_gateway_key_acts_for_a_bound_user_and_nobody_else(client, db):
    bound, stranger = make_user(db), make_user(db)
    pairing.bind(db, "telegram", secrets.token_hex(4), bound.id, "B")
    assert client.post("/v1/sessions", json={}, headers=gw(bound.id)).status_code == 201
    refused = client.get("/v1/sessions", headers=gw(stranger.id))
    assert refused.status_code == 403 and error_of(refused)["code"] == "forbidden"
    assert client.get("/v1/sessions", headers=gw("usr_nobody")).status_code == 403
    assert client.get("/v1/sessions", headers=gw()).status_code == 403


def test_a_webhook_routes_owner_is_bound_too(client, db):
    owner = make_user(db)
    webhook_routes.create(db, f"r{secrets.token_hex(3)}", owner.id, None, None)
    assert client.get("/v1/sessions", headers=gw(owner.id)).status_code == 200


def test_a_webhook_chat_is_a_webhook_session_and_a_telegram_chat_is_not(client, db):
    """The worker narrows a turn's tools by its session's source: a webhook route's chat must say so."""
    owner = make_user(db)
    webhook_routes.create(db, f"r{secrets.token_hex(3)}", owner.id, None, None)
    pairing.bind(db, "telegram", secrets.token_hex(4), owner.id, "O")
    hook = client.post(f"/v1/gateway/users/{owner.id}/chats", json={"key": "webhook:deploys:-"}, headers=gw()).json()
    chat = client.post(f"/v1/gateway/users/{owner.id}/chats", json={"key": "agent:main:telegram:dm:5"},
                       headers=gw()).json()
    sources = {s["id"]: s["source"] for s in client.get("/v1/sessions", headers=gw(owner.id)).json()["data"]}
    assert (sources[hook["session_id"]], sources[chat["session_id"]]) == ("webhook", "gateway")


def test_the_gateway_key_is_not_an_admin_key_nor_a_key_manager(client, db):
    bound = make_user(db)
    pairing.bind(db, "telegram", secrets.token_hex(4), bound.id)
    assert client.get("/v1/users", headers=gw()).status_code == 403
    assert client.get("/v1/admin/pairing", headers=gw()).status_code == 403
    assert client.get("/v1/keys", headers=gw(bound.id)).status_code == 403
    assert client.post("/v1/memory", json={}, headers=gw(bound.id)).status_code == 403


def test_gateway_routes_refuse_user_and_admin_keys(client, db, admin_headers):
    user = make_user(db)
    body = {"platform": "telegram", "platform_user_id": "1"}
    assert client.post("/v1/gateway/identities", json=body, headers=user.headers).status_code == 403
    assert client.post("/v1/gateway/identities", json=body, headers=admin_headers).status_code == 401


def test_an_unknown_platform_user_gets_a_code_and_the_owner_approves_it(client, admin_headers, db, enqueued):
    platform = f"t{secrets.token_hex(3)}"
    ask = {"platform": platform, "platform_user_id": "99", "display_name": "Pat"}
    answer = client.post("/v1/gateway/identities", json=ask, headers=gw()).json()
    assert answer["status"] == "code" and answer["user_id"] is None and len(answer["code"]) == 8
    listed = client.get("/v1/admin/pairing", headers=admin_headers).json()
    assert any(p["platform"] == platform for p in listed["pending"]) and answer["code"] not in str(listed)
    user = make_user(db)
    approved = client.post("/v1/admin/pairing/approve", headers=admin_headers,
                           json={"platform": platform, "code": answer["code"].lower(), "user": user.name})
    assert approved.status_code == 200 and approved.json()["user_id"] == user.id
    again = client.post("/v1/gateway/identities", json=ask, headers=gw()).json()
    assert again == {**again, "status": "bound", "user_id": user.id, "code": None}
    chat = client.post(f"/v1/gateway/users/{user.id}/chats", json={"key": "agent:main:x:dm:1"}, headers=gw()).json()
    same = client.post(f"/v1/gateway/users/{user.id}/chats", json={"key": "agent:main:x:dm:1"}, headers=gw()).json()
    fresh = client.post(f"/v1/gateway/users/{user.id}/chats", json={"key": "agent:main:x:dm:1", "fresh": True},
                        headers=gw()).json()
    assert chat["session_id"] == same["session_id"] != fresh["session_id"]
    ended = [payload for name, payload, _ in enqueued.calls if name == "end_session"]
    assert ended == [{"session_id": chat["session_id"]}], "/new really ends the session it replaces"
    revoked = client.post("/v1/admin/pairing/revoke", headers=admin_headers,
                          json={"platform": platform, "platform_user_id": "99"})
    assert revoked.status_code == 200
    assert client.get("/v1/sessions", headers=gw(user.id)).status_code == 403, "revocation is effective at once"


def test_the_owner_denies_a_code_it_stops_working_and_nobody_is_bound(client, admin_headers):
    platform = f"t{secrets.token_hex(3)}"
    ask = {"platform": platform, "platform_user_id": "77", "display_name": "Stranger"}
    code = client.post("/v1/gateway/identities", json=ask, headers=gw()).json()["code"]

    wrong = client.post("/v1/admin/pairing/deny", headers=admin_headers, json={"platform": platform, "code": "WRONG234"})
    assert wrong.status_code == 404 and wrong.json()["error"]["code"] == "pairing_code_unknown"
    denied = client.post("/v1/admin/pairing/deny", headers=admin_headers, json={"platform": platform, "code": code})
    assert denied.status_code == 200 and denied.json()["platform_user_id"] == "77" and code not in denied.text
    listed = client.get("/v1/admin/pairing", headers=admin_headers).json()
    assert not any(p["platform"] == platform for p in listed["pending"] + listed["bound"])
    approved = client.post("/v1/admin/pairing/approve", headers=admin_headers, json={"platform": platform, "code": code})
    assert approved.status_code == 404, "a denied code can no longer be approved"
