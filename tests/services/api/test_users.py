"""Users and keys, created with the admin key."""

from __future__ import annotations

import uuid

from sqlmodel import select

from shared.models.users import ApiKey
from shared.stores.users import hash_key
from tests.services.api.helpers import error_of


def _name() -> str:
    return f"ada-{uuid.uuid4().hex[:8]}"


def test_create_a_user_issue_a_key_and_use_it(client, admin_headers, db):
    name = _name()
    created = client.post("/v1/users", headers=admin_headers, json={"name": name})
    assert created.status_code == 201
    user = created.json()
    assert user["name"] == name and user["id"].startswith("usr_") and user["created_at"]
    assert name in [u["name"] for u in client.get("/v1/users", headers=admin_headers).json()["data"]]

    issued = client.post(f"/v1/users/{user['id']}/keys", headers=admin_headers)
    assert issued.status_code == 201
    key = issued.json()
    assert key["user_id"] == user["id"] and key["key"].startswith(key["prefix"])

    mine = {"Authorization": f"Bearer {key['key']}"}
    session = client.post("/v1/sessions", headers=mine, json={"title": "first"})
    assert session.status_code == 201

    with db.read() as s:
        rows = s.exec(select(ApiKey).where(ApiKey.user_id == user["id"])).all()
    assert [r.key_hash for r in rows] == [hash_key(key["key"])]
    assert all(key["key"] not in str(value) for r in rows for value in r.model_dump().values())


def test_a_key_can_be_issued_by_user_name(client, admin_headers):
    name = _name()
    client.post("/v1/users", headers=admin_headers, json={"name": name})
    issued = client.post(f"/v1/users/{name}/keys", headers=admin_headers)
    assert issued.status_code == 201


def test_duplicate_names_conflict(client, admin_headers):
    name = _name()
    assert client.post("/v1/users", headers=admin_headers, json={"name": name}).status_code == 201
    again = client.post("/v1/users", headers=admin_headers, json={"name": name})
    assert again.status_code == 409
    assert error_of(again)["code"] == "user_exists"


def test_unknown_user_gets_no_key(client, admin_headers):
    response = client.post("/v1/users/usr_nobody/keys", headers=admin_headers)
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


def test_bad_user_bodies_are_refused_naming_the_field(client, admin_headers):
    bad_name = client.post("/v1/users", headers=admin_headers, json={"name": "no spaces allowed"})
    assert bad_name.status_code == 422
    assert error_of(bad_name)["message"].startswith("name:")
    extra = client.post("/v1/users", headers=admin_headers, json={"name": _name(), "admin": True})
    assert extra.status_code == 422
    assert "admin" in error_of(extra)["message"]
