"""Bearer keys: who may call what, and the two error shapes a refused caller sees."""

from __future__ import annotations

import pytest

from tests.services.api.helpers import error_of, openai_error_of

BAD_KEY = {"Authorization": "Bearer hsk_not-a-real-key-at-all"}


@pytest.mark.parametrize("headers", [{}, BAD_KEY, {"Authorization": "Basic dXNlcjpwYXNz"}])
def test_native_routes_refuse_a_missing_or_bad_key(client, headers):
    response = client.get("/v1/sessions", headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert error_of(response)["code"] == "unauthorized"


@pytest.mark.parametrize("headers", [{}, BAD_KEY])
def test_openai_routes_refuse_a_bad_key_in_openai_shape(client, headers):
    for response in (
        client.get("/v1/models", headers=headers),
        client.post("/v1/chat/completions", headers=headers,
                    json={"model": "x", "messages": [{"role": "user", "content": "hi"}]}),
    ):
        assert response.status_code == 401
        error = openai_error_of(response)
        assert error["type"] == "invalid_request_error" and error["code"] == "invalid_api_key"


def test_a_user_key_opens_user_routes(client, user):
    assert client.get("/v1/sessions", headers=user.headers).status_code == 200


def test_admin_routes_refuse_user_keys_and_strangers(client, user):
    for method, path in [("GET", "/v1/users"), ("POST", "/v1/users"), ("GET", "/v1/admin/status"),
                         ("POST", f"/v1/users/{user.id}/keys")]:
        body = {"name": "someone"} if path == "/v1/users" and method == "POST" else None
        as_user = client.request(method, path, headers=user.headers, json=body)
        assert as_user.status_code == 403, path
        assert error_of(as_user)["code"] == "forbidden"
        anonymous = client.request(method, path, json=body)
        assert anonymous.status_code == 401, path
        assert error_of(client.request(method, path, headers=BAD_KEY, json=body))["code"] == "unauthorized"


def test_the_admin_key_is_not_a_user_key(client, admin_headers):
    assert client.get("/v1/admin/status", headers=admin_headers).status_code == 200
    assert client.get("/v1/sessions", headers=admin_headers).status_code == 401
