"""Every failure answers our error shape with a stable code; nothing leaks a traceback."""

from __future__ import annotations

import httpx

from services.api.main import create_app
from tests.services.api.helpers import error_of
from tests.support.live import serve_api


def test_unknown_routes_and_methods(client, user):
    missing = client.get("/v1/nothing-here", headers=user.headers)
    assert missing.status_code == 404 and error_of(missing)["code"] == "not_found"
    wrong_method = client.delete("/v1/sessions", headers=user.headers)
    assert wrong_method.status_code == 405 and error_of(wrong_method)["code"] == "method_not_allowed"


def test_an_unexpected_error_is_500_without_details_and_logged_with_its_traceback(settings, capfd):
    app = create_app(settings)

    @app.get("/boom")
    def boom():
        raise RuntimeError("secret detail from deep inside")

    with serve_api(app) as base:
        response = httpx.get(f"{base}/boom")
    assert response.status_code == 500
    assert error_of(response) == {"code": "internal_error", "message": "Internal server error."}
    assert "secret detail" not in response.text and "Traceback" not in response.text
    logged = capfd.readouterr().err
    assert "Traceback" in logged and "RuntimeError: secret detail" in logged


def test_the_readme_states_what_malformed_and_invalid_json_are_answered(client, user):
    """Reproduction: the README said invalid input is answered 422, while a body that is not JSON is 400
    malformed_json (the error tree's MalformedJSON, a BadRequest: the request could not be read at all)."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    json_headers = {**user.headers, "Content-Type": "application/json"}
    malformed = client.post("/v1/sessions", headers=json_headers, content=b'{"title": "unterminated')
    invalid = client.post("/v1/sessions", headers=json_headers, json={"title": ["not", "a", "title"]})
    for answer in (malformed, invalid):
        assert f"`{answer.status_code}` `{error_of(answer)['code']}`" in readme
