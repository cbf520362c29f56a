"""Signing in and out of the console, and what a bad, expired or revoked session does."""

from __future__ import annotations

from services.api.console import session_store
from services.api.console.session import SESSION_COOKIE


def test_a_user_key_signs_in_and_the_chat_page_opens(browser, user):
    page = browser.get("/signin")
    assert page.status_code == 200
    assert '<label for="api_key">API key</label>' in page.text
    response = browser.sign_in(user.key)
    assert response.headers["location"] == "/chat"
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    chat = browser.get("/chat")
    assert chat.status_code == 200 and "<h1>Chat</h1>" in chat.text
    assert user.name in chat.text and 'aria-label="Main"' in chat.text


def test_a_wrong_key_is_refused_with_an_alert_and_no_session(browser):
    response = browser.post_form("/signin", "/signin", {"api_key": "not-a-key", "next": "/"})
    assert response.status_code == 401
    assert 'role="alert"' in response.text and SESSION_COOKIE not in response.headers.get("set-cookie", "")


def test_not_signed_in_a_page_redirects_to_sign_in_with_next(browser):
    response = browser.get("/chat?x=1")
    assert response.status_code == 303 and response.headers["location"] == "/signin?next=/chat%3Fx%3D1"


def test_a_post_without_its_csrf_token_is_refused_403(signed_in):
    response = signed_in.http.post("/signout", data={})
    assert response.status_code == 403 and 'role="alert"' in response.text
    response = signed_in.http.post("/signout", data={"csrf_token": "forged"})
    assert response.status_code == 403
    assert signed_in.get("/chat").status_code == 200  # still signed in


def test_a_form_from_another_origin_is_refused_403(signed_in):
    token = signed_in.get("/chat").text.split('name="csrf_token" value="')[1].split('"')[0]
    response = signed_in.http.post("/signout", data={"csrf_token": token}, headers={"Origin": "https://evil.example"})
    assert response.status_code == 403


def test_sign_out_ends_the_session(signed_in):
    response = signed_in.post_form("/chat", "/signout", {})
    assert response.status_code == 303 and response.headers["location"] == "/signin"
    assert signed_in.get("/chat").status_code == 303


def test_a_session_id_never_issued_is_signed_out(signed_in):
    signed_in.http.cookies.set(SESSION_COOKIE, signed_in.http.cookies[SESSION_COOKIE][:-2] + "AA")
    response = signed_in.get("/chat")
    assert response.status_code == 303 and response.headers["location"].startswith("/signin")


def test_a_session_lasts_console_session_hours_in_redis_and_in_the_browser(browser, user, settings, redis_client):
    response = browser.sign_in(user.key)
    max_age = int(settings.console_session_hours * 3600)
    assert f"Max-Age={max_age}" in response.headers["set-cookie"]
    record = session_store._redis_key(settings.broker_key_prefix, browser.http.cookies[SESSION_COOKIE])
    assert 0 < redis_client.ttl(record) <= max_age
    redis_client.delete(record)  # what its expiry does
    assert browser.get("/chat").status_code == 303


def test_a_revoked_key_signs_the_page_out(signed_in, client, user, admin_headers, db):
    from shared.stores import users

    assert signed_in.get("/chat").status_code == 200
    keys = client.get(f"/v1/users/{user.id}/keys", headers=admin_headers).raise_for_status().json()["data"]
    for key in keys:
        client.delete(f"/v1/users/{user.id}/keys/{key['id']}", headers=admin_headers).raise_for_status()
    assert users.authenticate(db, user.key) is None
    response = signed_in.get("/chat")
    assert response.status_code == 303 and response.headers["location"].startswith("/signin")


def test_the_admin_key_alone_opens_owner_views_not_user_views(browser, settings):
    admin = settings.admin_api_key.get_secret_value()
    response = browser.sign_in(admin)
    assert response.headers["location"].startswith("/owner")
    assert browser.get("/chat").status_code == 303


def test_a_user_key_never_opens_owner_views(signed_in):
    assert signed_in.get("/owner/status").status_code == 404


def test_next_never_leaves_the_site(browser, user):
    response = browser.post_form("/signin", "/signin", {"api_key": user.key, "next": "//evil.example/x"})
    assert response.headers["location"] == "/chat"


def test_every_console_response_has_the_security_headers(browser, signed_in):
    for response in (browser.get("/signin"), browser.get("/"), signed_in.get("/chat"), signed_in.get("/owner/nope"),
                     signed_in.get("/chat/does-not-exist"), signed_in.get("/static/console/console.css")):
        assert response.headers["content-security-policy"].startswith("default-src 'self'; script-src 'self'")
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "same-origin"
    assert signed_in.get("/chat").headers["cache-control"] == "no-store"


def test_the_json_api_keeps_its_json_errors_and_schema(client):
    assert client.get("/v1/sessions").json()["error"]["code"] == "unauthorized"
    paths = client.get("/openapi.json").json()["paths"]
    assert not any(p.startswith(("/chat", "/signin", "/memory", "/search")) for p in paths)


def test_a_user_key_with_the_admin_key_opens_both_views(browser, user, settings):
    browser.sign_in(user.key, admin_key=settings.admin_api_key.get_secret_value())
    page = browser.get("/chat").text
    assert 'href="/memory"' in page and 'href="/owner/users"' in page and "(owner)" in page


def test_a_wrong_admin_key_beside_a_user_key_is_refused(browser, user):
    response = browser.post_form("/signin", "/signin", {"api_key": user.key, "admin_key": "nope", "next": "/"})
    assert response.status_code == 401 and SESSION_COOKIE not in response.headers.get("set-cookie", "")


def test_a_script_in_the_next_parameter_is_escaped(browser):
    page = browser.get("/signin", params={"next": '/chat"><script>alert(1)</script>'}).text
    assert "<script>alert(1)" not in page
