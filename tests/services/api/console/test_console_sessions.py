"""Server-side console sessions: the cookie is an opaque id, sign-out ends every copy, CSRF binds to the session."""

from __future__ import annotations

import base64

import httpx

from services.api.console.session import CSRF_COOKIE, SESSION_COOKIE
from tests.services.api.console.conftest import Browser, csrf_of
from tests.support.factories import make_user


def another_browser(api: str) -> Browser:
    return Browser(httpx.Client(base_url=api, timeout=20, follow_redirects=False))


def test_a_copied_cookie_stops_working_after_sign_out(api, signed_in):
    """Reproduction: the session cookie carried the API key itself, so a copy taken before sign-out still opened
    the console after it, although the README says signing out ends the session."""
    copy = signed_in.http.cookies[SESSION_COOKIE]
    assert signed_in.post_form("/chat", "/signout", {}).status_code == 303

    thief = another_browser(api)
    thief.http.cookies.set(SESSION_COOKIE, copy)
    response = thief.get("/chat")
    assert response.status_code == 303 and response.headers["location"].startswith("/signin")


def test_the_cookie_carries_no_key(browser, user, settings):
    """Reproduction: the cookie's payload was base64 JSON holding the user's key (and the admin key for an owner)."""
    browser.sign_in(user.key, admin_key=settings.admin_api_key.get_secret_value())
    value = browser.http.cookies[SESSION_COOKIE]
    readable = value + base64.urlsafe_b64decode(value.split(".")[0] + "===").decode("latin-1")
    assert user.key not in readable and settings.admin_api_key.get_secret_value() not in readable


def test_a_planted_csrf_nonce_cookie_and_no_origin_cannot_post_for_a_signed_in_browser(api, signed_in):
    """Reproduction: a form's token was HMAC(secret, the browser's nonce cookie). An attacker read a nonce and its
    token off their own /signin page, planted that nonce cookie in the victim's browser, and a form posted without
    an Origin header with the attacker's token passed (here: signed the victim out)."""
    attacker = another_browser(api)
    token = csrf_of(attacker.get("/signin").text)
    signed_in.http.cookies.set(CSRF_COOKIE, attacker.http.cookies[CSRF_COOKIE])

    response = signed_in.http.post("/signout", data={"csrf_token": token})
    assert response.status_code == 403
    assert signed_in.get("/chat").status_code == 200  # still signed in


def test_one_users_session_with_another_users_csrf_token_is_refused(api, signed_in, db):
    other = another_browser(api)
    other.sign_in(make_user(db).key)
    token = csrf_of(other.get("/chat").text)
    assert signed_in.http.post("/signout", data={"csrf_token": token}).status_code == 403
    assert signed_in.get("/chat").status_code == 200


def test_a_planted_session_id_is_never_adopted_and_ends_at_sign_in(api, browser, user, db):
    """Reproduction (session fixation): an attacker's session cookie planted in a victim's browser kept working
    for the attacker after the victim signed in over it, because nothing on the server ended it."""
    attacker = another_browser(api)
    attacker.sign_in(make_user(db).key)
    planted = attacker.http.cookies[SESSION_COOKIE]
    browser.http.cookies.set(SESSION_COOKIE, planted)

    issued = browser.sign_in(user.key).headers["set-cookie"]
    assert f"{SESSION_COOKIE}=" in issued and planted not in issued
    browser.http.cookies.clear()
    browser.http.cookies.set(SESSION_COOKIE, issued.split(f"{SESSION_COOKIE}=")[1].split(";")[0])
    assert user.name in browser.get("/chat").text
    assert attacker.get("/chat").status_code == 303  # the planted session ended with the sign-in


def test_signing_out_one_browser_leaves_the_keys_other_sessions(api, signed_in, user):
    laptop = another_browser(api)
    laptop.sign_in(user.key)
    assert signed_in.post_form("/chat", "/signout", {}).status_code == 303
    assert laptop.get("/chat").status_code == 200


def test_signing_out_without_a_live_session_just_goes_to_sign_in(browser):
    response = browser.http.post("/signout", data={})
    assert response.status_code == 303 and response.headers["location"] == "/signin"


def test_only_a_trusted_proxy_makes_the_session_cookie_secure(settings, user):
    """X-Forwarded-Proto: https from the listed proxy marks the cookie Secure; from anyone else it is ignored."""
    from services.api.main import create_app
    from tests.support.live import serve_api

    for trusted, secure in (("", False), ("127.0.0.1", True)):
        with serve_api(create_app(settings.model_copy(update={"trusted_proxies": trusted}))) as base:
            browser = another_browser(base)
            token = csrf_of(browser.get("/signin").text)
            response = browser.http.post("/signin", headers={"X-Forwarded-Proto": "https"},
                                         data={"csrf_token": token, "api_key": user.key, "next": "/"})
            assert response.status_code == 303
            assert ("Secure" in response.headers["set-cookie"]) is secure


def test_a_changed_admin_key_ends_the_owners_sessions(browser, settings):
    """An owner session remembers which admin key opened it: after ADMIN_API_KEY changes it opens nothing."""
    from pydantic import SecretStr

    from services.api.main import create_app
    from tests.support.live import serve_api

    browser.sign_in(settings.admin_api_key.get_secret_value())
    cookie = browser.http.cookies[SESSION_COOKIE]
    assert browser.get("/owner/status").status_code == 200
    rotated = settings.model_copy(update={"admin_api_key": SecretStr("a-new-admin-key-0123456789")})
    with serve_api(create_app(rotated)) as base:
        after = another_browser(base)
        after.http.cookies.set(SESSION_COOKIE, cookie)
        assert after.get("/owner/status").status_code == 404
