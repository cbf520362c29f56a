"""/owner/*: users and keys, pairing approve / deny, webhook routes, status and failed deliveries; owner only."""

from __future__ import annotations

import re
import secrets

import httpx
import pytest

from shared.stores import outbox, pairing, users
from tests.services.api.console.conftest import Browser
from tests.support.factories import make_user

OWNER_PAGES = ("/owner/users", "/owner/pairing", "/owner/webhooks", "/owner/status", "/owner/deliveries")


@pytest.fixture
def owner(browser: Browser, settings) -> Browser:
    browser.sign_in(settings.admin_api_key.get_secret_value())
    return browser


@pytest.mark.parametrize("path", OWNER_PAGES)
def test_owner_pages_are_not_there_for_a_user_or_a_stranger(browser: Browser, user, path):
    assert browser.get(path).status_code == 404
    browser.sign_in(user.key)
    assert browser.get(path).status_code == 404
    assert 'href="/owner/users"' not in browser.get("/skills").text


def test_every_owner_page_opens_for_the_owner_with_the_owner_nav(owner: Browser):
    for path in OWNER_PAGES:
        page = owner.get(path)
        assert page.status_code == 200, path
        assert page.text.count("<h1>") == 1 and 'href="/owner/deliveries"' in page.text


def test_the_owner_creates_a_user_and_a_key_shown_once_then_revokes_it(owner: Browser, db, api):
    name = f"console-{secrets.token_hex(3)}"
    created = owner.post_form("/owner/users", "/owner/users", {"name": name})
    assert created.status_code == 201 and f"Created user {name}." in created.text
    user = users.find_user(db, name)

    issued = owner.post_form("/owner/users", f"/owner/users/{user.id}/keys", {})
    key = re.search(r'data-testid="issued-key">([^<]+)<', issued.text).group(1)
    assert issued.status_code == 201 and key not in owner.get("/owner/users").text  # shown once
    with httpx.Client(base_url=api, headers={"Authorization": f"Bearer {key}"}) as client:
        assert client.get("/v1/sessions").status_code == 200
        [row] = users.list_keys(db, user.id)
        revoked = owner.post_form("/owner/users", f"/owner/users/{user.id}/keys/{row.id}/revoke", {})
        assert revoked.status_code == 303
        assert client.get("/v1/sessions").status_code == 401, "revocation is effective at once"


def test_a_bad_or_taken_user_name_is_refused_plainly(owner: Browser, user):
    bad = owner.post_form("/owner/users", "/owner/users", {"name": "<script>x</script>"})
    assert bad.status_code == 422 and 'role="alert"' in bad.text and "<script>x" not in bad.text
    taken = owner.post_form("/owner/users", "/owner/users", {"name": user.name})
    assert taken.status_code == 409 and 'role="alert"' in taken.text


def test_owner_forms_need_the_csrf_token(owner: Browser, db):
    before = len(users.list_users(db))
    assert owner.http.post("/owner/users", data={"name": "forged-user"}).status_code == 403
    assert len(users.list_users(db)) == before


def test_a_pairing_code_is_approved_or_denied_from_the_page_and_names_are_escaped(owner: Browser, db, user):
    platform = f"t{secrets.token_hex(3)}"
    first = pairing.request_code(db, platform, "501", "<script>alert(1)</script>")
    second = pairing.request_code(db, platform, "502", "Pat")
    page = owner.get("/owner/pairing").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in page
    assert first.code not in page and second.code not in page

    wrong = owner.post_form("/owner/pairing", "/owner/pairing", {"platform": platform, "code": "WRONG234",
                                                                 "decision": "approve"})
    assert wrong.status_code == 303 and "No pending pairing code" in owner.get("/owner/pairing").text
    approved = owner.post_form("/owner/pairing", "/owner/pairing", {"platform": platform, "code": first.code.lower(),
                                                                    "user": user.name, "decision": "approve"})
    assert approved.status_code == 303 and pairing.find_identity(db, platform, "501")[1].id == user.id
    denied = owner.post_form("/owner/pairing", "/owner/pairing", {"platform": platform, "code": second.code,
                                                                  "decision": "deny"})
    assert denied.status_code == 303 and pairing.find_identity(db, platform, "502") is None
    assert not [p for p in pairing.list_pending(db) if p.platform == platform]
    assert f"Denied the code of Pat ({platform})." in owner.get("/owner/pairing").text


def test_a_pairing_request_is_denied_from_the_page_without_its_code(owner: Browser, db):
    """Reproduction: the page showed waiting requests without their codes and could deny only by code, so the
    owner could not clear requests from strangers (three kept pairing closed for everyone)."""
    platform = f"t{secrets.token_hex(3)}"
    pairing.request_code(db, platform, "601", "Spammer")
    request_id = next(p.id for p in pairing.list_pending(db) if p.platform == platform)
    page = owner.get("/owner/pairing").text
    assert 'action="/owner/pairing/dismiss"' in page and f'value="{request_id}"' in page
    denied = owner.post_form("/owner/pairing", "/owner/pairing/dismiss", {"platform": platform,
                                                                          "request_id": request_id})
    assert denied.status_code == 303
    assert not [p for p in pairing.list_pending(db) if p.platform == platform]
    assert f"Denied the request of Spammer ({platform})." in owner.get("/owner/pairing").text
    again = owner.post_form("/owner/pairing", "/owner/pairing/dismiss", {"platform": platform, "request_id": request_id})
    assert again.status_code == 303 and "No pending pairing request" in owner.get("/owner/pairing").text


def test_a_webhook_route_is_added_with_its_secret_once_and_removed(owner: Browser, db, user):
    name = f"hook-{secrets.token_hex(3)}"
    added = owner.post_form("/owner/webhooks", "/owner/webhooks", {"name": name, "user": user.name,
                                                                   "callback_url": "", "deliver": ""})
    assert added.status_code == 201 and 'data-testid="issued-secret"' in added.text
    listed = owner.get("/owner/webhooks").text
    assert f"/webhooks/{name}" in listed and "issued-secret" not in listed
    assert "<td>read-only</td>" in listed  # its turns get no terminal and no memory writes
    assert "would be refused" not in added.text
    inside = owner.post_form("/owner/webhooks", "/owner/webhooks", {"name": f"in-{name}", "user": user.name,
                                                                    "callback_url": "http://169.254.169.254/x"})
    assert inside.status_code == 201 and "Replies to this callback would be refused" in inside.text
    bad = owner.post_form("/owner/webhooks", "/owner/webhooks", {"name": "x y", "user": user.name})
    assert bad.status_code == 422 and 'role="alert"' in bad.text
    removed = owner.post_form("/owner/webhooks", f"/owner/webhooks/{name}/remove", {})
    assert removed.status_code == 303 and f"/webhooks/{name}" not in owner.get("/owner/webhooks").text
    assert owner.post_form("/owner/webhooks", f"/owner/webhooks/{name}/remove", {}).status_code == 404


def test_status_shows_queues_and_deliveries_show_a_failed_reply_escaped(owner: Browser, db):
    status = owner.get("/owner/status").text
    assert "turns" in status and "review" in status and "waiting" in status
    who = make_user(db)
    item = outbox.record(db, who.id, "telegram", "42", None, "<script>alert('reply')</script>")
    outbox.report(db, item.id, ok=False, error="<b>chat not found</b>", retry_in=None, give_up=True)
    page = owner.get("/owner/deliveries").text
    assert "&lt;b&gt;chat not found&lt;/b&gt;" in page and "&lt;script&gt;alert(&#39;reply&#39;)" in page
    assert "<script>alert" not in page
