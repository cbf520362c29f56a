"""/v1/mcp/servers: a user's own MCP servers, the owner's for everyone (admin key), and nobody else's."""

from __future__ import annotations

import json

import pytest

from shared.files import mcp_servers
from shared.mcp import health
from shared.messaging.connections import get_redis
from shared.queue.names import PROBE_MCP_SERVER
from tests.services.api.helpers import error_of
from tests.support.factories import make_user

PATH = "/v1/mcp/servers"


def test_a_user_adds_lists_tests_and_removes_their_server_and_a_worker_is_asked_to_connect(client, db, enqueued,
                                                                                            settings):
    user = make_user(db)
    made = client.post(PATH, headers=user.headers, json={"name": "home", "url": "https://ha.example/mcp?token=s3cret",
                                                          "headers": {"Authorization": "Bearer s3cret"}})
    assert made.status_code == 201, made.text
    assert made.json() | {"checked_at": None} == {
        "name": "home", "scope": "user", "transport": "http", "command": None, "url": "https://ha.example/mcp",
        "state": "starting", "tools": 0, "last_error": None, "last_seen": None, "checked_at": None}
    assert "s3cret" not in client.get(PATH, headers=user.headers).text
    assert [(n, p) for n, p, _ in enqueued.calls if n == PROBE_MCP_SERVER] == [
        (PROBE_MCP_SERVER, {"server": "home", "user_id": user.id})]

    health.record(get_redis(settings), user.id, "home", "failed", error="ConnectError: refused")
    [listed] = client.get(PATH, headers=user.headers).json()
    assert (listed["state"], listed["last_error"]) == ("failed", "ConnectError: refused")
    assert client.post(f"{PATH}/home/test", headers=user.headers).status_code == 202

    assert client.delete(f"{PATH}/home", headers=user.headers).status_code == 204
    assert client.get(PATH, headers=user.headers).json() == []
    assert client.delete(f"{PATH}/home", headers=user.headers).status_code == 404


def test_another_users_server_is_invisible_and_404(client, db):
    owner, other = make_user(db), make_user(db)
    client.post(PATH, headers=owner.headers, json={"name": "private", "command": ["mcp-server"]}).raise_for_status()

    assert client.get(PATH, headers=other.headers).json() == []
    assert client.delete(f"{PATH}/private", headers=other.headers).status_code == 404
    assert client.post(f"{PATH}/private/test", headers=other.headers).status_code == 404
    assert [s["name"] for s in client.get(PATH, headers=owner.headers).json()] == ["private"]


def test_the_owners_servers_apply_to_everyone_and_only_the_admin_key_removes_them(client, db, admin_headers, settings):
    user = make_user(db)
    assert client.post(PATH, headers=admin_headers, json={"name": "shared-cal", "url": "https://cal.example/mcp"}
                       ).status_code == 201
    try:
        mine = [s for s in client.get(PATH, headers=user.headers).json() if s["name"] == "shared-cal"]
        assert [(s["scope"], s["transport"]) for s in mine] == [("global", "http")]
        assert client.delete(f"{PATH}/shared-cal", headers=user.headers).status_code == 403
        clash = client.post(PATH, headers=user.headers, json={"name": "shared-cal", "command": ["x"]})
        assert error_of(clash)["code"] == "conflict"
        assert json.loads(mcp_servers.config_path(settings.data_dir, "global").read_text())["servers"][-1]["name"] \
            == "shared-cal"
    finally:
        assert client.delete(f"{PATH}/shared-cal", headers=admin_headers).status_code == 204


@pytest.mark.parametrize("body", [
    {"name": "both", "command": ["x"], "url": "https://a.example/mcp"},
    {"name": "none"},
    {"name": "Bad_Name", "command": ["x"]},
    {"name": "x" * 25, "command": ["x"]},
    {"name": "argv", "command": []},
    {"name": "argv", "command": ["x"] * 65},
    {"name": "nul", "command": ["x\0y"]},
    {"name": "env", "command": ["x"], "env": {"A": "line\nbreak"}},
    {"name": "env", "command": ["x"], "env": {"BAD NAME": "v"}},
    {"name": "scheme", "url": "file:///etc/passwd"},
    {"name": "hdr", "command": ["x"], "headers": {"A": "b"}},
    {"name": "extra", "command": ["x"], "shell": True},
    {"name": 5, "command": ["x"]},
    {"name": "typ", "command": "not a list"},
])
def test_a_bad_server_is_refused_with_422(client, db, body):
    user = make_user(db)
    answer = client.post(PATH, headers=user.headers, json=body)
    assert answer.status_code == 422, answer.text
    assert client.get(PATH, headers=user.headers).json() == []


def test_a_name_taken_is_409_and_past_the_cap_is_refused(client, db, settings):
    user = make_user(db)
    for n in range(settings.mcp_max_servers):
        assert client.post(PATH, headers=user.headers, json={"name": f"s{n}", "command": ["x"]}).status_code == 201
    assert error_of(client.post(PATH, headers=user.headers, json={"name": "s0", "command": ["x"]}))["code"] == "conflict"
    over = client.post(PATH, headers=user.headers, json={"name": "one-more", "command": ["x"]})
    assert over.status_code == 422 and "MCP_MAX_SERVERS" in error_of(over)["message"]


def test_without_a_key_it_is_401(client):
    assert client.get(PATH).status_code == 401
    assert client.get(PATH, headers={"Authorization": "Bearer nope"}).status_code == 401
