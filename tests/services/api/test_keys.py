"""Key revocation: admin and self-service routes, effective at once in every api process."""

from __future__ import annotations

import httpx

from services.api.auth_cache import AuthCache
from services.api.main import create_app
from shared.stores import users
from shared.stores.users import hash_key
from tests.services.api.helpers import error_of
from tests.support.env import free_port, start_embedded_redis
from tests.support.factories import make_user
from tests.support.live import serve_api
from tests.support.waiting import wait_until

PUBLIC_FIELDS = {"id", "user_id", "prefix", "created_at", "revoked_at"}


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def served(base: str, key: str) -> int:
    return httpx.get(f"{base}/v1/sessions", headers=bearer(key), timeout=10).status_code


def key_id_of(db, user_id: str, key: str) -> str:
    return next(k.id for k in users.list_keys(db, user_id) if k.key_hash == hash_key(key))


def test_an_admin_revocation_is_refused_at_once_by_every_api_process(api, api_app, admin_headers, db, settings):
    """Finding: there was no way to revoke a key (`DELETE /v1/users/{id}/keys/{key_id}` answered 405), and a key
    taken out of the database kept working for up to 5 s in each api process, from its auth cache.

    Two api processes (two apps, each with its own auth cache) serve the key; the admin revokes it through
    one; the very next request on either answers 401.
    """
    user = make_user(db)
    other = create_app(settings)
    with serve_api(other) as second:
        for app in (api_app, other):
            wait_until(lambda app=app: app.state.auth_cache.armed, what="the revocation listener")
        assert served(api, user.key) == served(second, user.key) == 200
        assert other.state.auth_cache.get(hash_key(user.key)) is not None  # the second process has it cached

        key_id = key_id_of(db, user.id, user.key)
        revoked = httpx.delete(f"{api}/v1/users/{user.id}/keys/{key_id}", headers=admin_headers, timeout=10)

        assert revoked.status_code == 200, revoked.text
        assert served(second, user.key) == 401
        assert served(api, user.key) == 401
    body = revoked.json()
    assert set(body) == PUBLIC_FIELDS and body["id"] == key_id and body["revoked_at"]
    assert users.authenticate(db, user.key) is None


def test_the_admin_lists_a_users_keys_without_the_keys(client, admin_headers, db):
    """Finding: an admin could issue keys but not see which a user holds (no `GET /v1/users/{id}/keys`)."""
    user = make_user(db)
    _, second = users.create_key(db, user.id)
    listed = client.get(f"/v1/users/{user.name}/keys", headers=admin_headers)
    assert listed.status_code == 200
    rows = listed.json()["data"]
    assert [set(r) for r in rows] == [PUBLIC_FIELDS] * 2
    assert {r["prefix"] for r in rows} == {user.key[:10], second[:10]}
    for secret in (user.key, second, hash_key(user.key), hash_key(second)):
        assert secret not in listed.text
    assert client.get("/v1/users/usr_nobody/keys", headers=admin_headers).status_code == 404


def test_the_admin_route_refuses_a_key_of_another_user_and_the_admin_key(client, admin_headers, db):
    """Finding (guard): a revocation route must not revoke a key through the wrong user, nor touch the admin key."""
    owner, stranger = make_user(db), make_user(db)
    key_id = key_id_of(db, owner.id, owner.key)
    wrong = client.delete(f"/v1/users/{stranger.id}/keys/{key_id}", headers=admin_headers)
    assert wrong.status_code == 404 and error_of(wrong)["code"] == "not_found"
    assert client.get("/v1/sessions", headers=owner.headers).status_code == 200
    as_user = client.delete(f"/v1/users/{owner.id}/keys/{key_id}", headers=stranger.headers)
    assert as_user.status_code == 403
    assert client.get("/v1/admin/status", headers=admin_headers).status_code == 200


def test_a_user_lists_and_revokes_their_own_keys_only(client, db):
    """Finding: a user could neither list nor revoke their own keys (`GET /v1/keys` answered 404).

    Another user's key id answers 404 (never 403), and that key keeps working; revoking one's last key,
    the one in use, is allowed and takes effect on the next request.
    """
    me, stranger = make_user(db), make_user(db)
    _, spare = users.create_key(db, me.id)
    listed = client.get("/v1/keys", headers=me.headers)
    assert listed.status_code == 200
    assert {r["prefix"] for r in listed.json()["data"]} == {me.key[:10], spare[:10]}
    assert me.key not in listed.text and spare not in listed.text and hash_key(me.key) not in listed.text
    theirs = key_id_of(db, stranger.id, stranger.key)
    assert theirs not in client.get("/v1/keys", headers=me.headers).text

    refused = client.delete(f"/v1/keys/{theirs}", headers=me.headers)
    assert refused.status_code == 404 and error_of(refused)["code"] == "not_found"
    assert client.get("/v1/sessions", headers=stranger.headers).status_code == 200

    spare_id = key_id_of(db, me.id, spare)
    assert client.get("/v1/sessions", headers=bearer(spare)).status_code == 200
    assert client.delete(f"/v1/keys/{spare_id}", headers=me.headers).json()["revoked_at"]
    assert client.get("/v1/sessions", headers=bearer(spare)).status_code == 401
    rows = {r["id"]: r for r in client.get("/v1/keys", headers=me.headers).json()["data"]}
    assert rows[spare_id]["revoked_at"] and rows[key_id_of(db, me.id, me.key)]["revoked_at"] is None

    last = client.delete(f"/v1/keys/{key_id_of(db, me.id, me.key)}", headers=me.headers)
    assert last.status_code == 200
    assert client.get("/v1/keys", headers=me.headers).status_code == 401


def test_a_revocation_unheard_while_redis_was_down_holds_after_it_returns(settings, db, tmp_data_dir):
    """Finding (guard): a process that missed a revocation's announcement (Redis down) must not keep serving
    the key from its cache once Redis is back; it empties its cache when it (re)subscribes.

    A private redis-server is killed while the key is cached (for an hour), the key is revoked in the
    database meanwhile, Redis is restarted on the same port: the key answers 401.
    """
    port = free_port()
    url, proc = start_embedded_redis(tmp_data_dir, port)
    app = create_app(settings.model_copy(update={"redis_url": url}))
    app.state.auth_cache = AuthCache(ttl=3600)
    cache = app.state.auth_cache
    user = make_user(db)
    try:
        with serve_api(app) as base:
            wait_until(lambda: cache.armed, what="the revocation listener")
            assert served(base, user.key) == 200 and cache.get(hash_key(user.key)) is not None
            proc.kill()
            proc.wait(10)
            wait_until(lambda: not cache.armed, what="the listener to notice Redis is gone")
            users.revoke_key(db, user.id, key_id_of(db, user.id, user.key))
            _, proc = start_embedded_redis(tmp_data_dir, port)
            wait_until(lambda: cache.armed, timeout=20, what="the listener to resubscribe")
            assert served(base, user.key) == 401
    finally:
        proc.kill()
        proc.wait(10)
