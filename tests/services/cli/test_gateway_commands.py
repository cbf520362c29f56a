"""`hstack pairing` and `hstack webhooks`, and failed gateway deliveries in `hstack status`."""

from __future__ import annotations

import secrets

from shared.config import get_settings
from shared.db import get_database
from shared.stores import outbox, pairing
from tests.support.factories import make_user


def db():
    return get_database(get_settings().sqlalchemy_url)


def test_pairing_list_approve_and_revoke(hstack):
    platform = "telegram"
    pid = str(secrets.randbelow(10**9))
    user = make_user(db())
    code = pairing.request_code(db(), platform, pid, "Quinn").code
    code_, out, _ = hstack("pairing", "list")
    assert code_ == 0 and pid in out and code not in out, "pending requests are listed, never their codes"
    code_, out, _ = hstack("pairing", "approve", platform, code.lower(), "--user", user.name)
    assert code_ == 0 and f"is now {user.name}" in out
    code_, out, _ = hstack("pairing", "revoke", platform, pid)
    assert code_ == 0 and "Revoked" in out and pairing.find_identity(db(), platform, pid) is None


def test_the_owner_denies_by_request_id_or_platform_user_and_clears_a_platform(hstack):
    """Reproduction: `hstack pairing` had no deny at all and the list showed no request ids, so the owner could
    not refuse the throwaway requests that kept pairing closed."""
    platform = f"x{secrets.token_hex(3)}"
    for pid in ("1", "2", "3"):
        pairing.request_code(db(), platform, pid, f"spam{pid}")
    request_id = next(p.id for p in pairing.list_pending(db()) if p.platform == platform and p.platform_user_id == "1")
    assert request_id in hstack("pairing", "list")[1], "the list shows each request's id"
    code_, out, _ = hstack("pairing", "deny", platform, "--id", request_id)
    assert code_ == 0 and "Denied" in out and "spam1" in out
    code_, out, _ = hstack("pairing", "deny", platform, "--platform-user", "2")
    assert code_ == 0 and "spam2" in out
    code_, out, _ = hstack("pairing", "clear", platform)
    assert code_ == 0 and "Denied 1 pending request(s)." in out
    assert not [p for p in pairing.list_pending(db()) if p.platform == platform]


def test_a_wrong_code_is_a_readable_error(hstack):
    code_, _out, err = hstack("pairing", "approve", f"x{secrets.token_hex(3)}", "ABCDEFGH")
    assert code_ == 1 and "No pending pairing code" in err


def test_webhooks_create_prints_the_secret_once_then_list_and_delete(hstack):
    user = make_user(db())
    name = f"hook{secrets.token_hex(3)}"
    code_, out, _ = hstack("webhooks", "create", name, "--user", user.name, "--callback", "http://127.0.0.1:9/x",
                           "--deliver", "telegram:42")
    secret = out.split("Secret:\n", 1)[1].split()[0]
    assert code_ == 0 and len(secret) == 64
    assert "Warning: Replies to this callback would be refused: 127.0.0.1 resolves to 127.0.0.1, a loopback" in out
    code_, out, _ = hstack("webhooks", "list")
    assert code_ == 0 and name in out and secret not in out
    assert f"{name} " in out and "tools read-only\n" in out.split(name, 1)[1]
    assert hstack("webhooks", "delete", name)[0] == 0
    assert name not in hstack("webhooks", "list")[1]


def test_a_route_created_with_toolsets_lists_them(hstack):
    """A webhook route's turns get read-only tools unless its owner adds toolsets; the list says which."""
    user = make_user(db())
    name = f"ops{secrets.token_hex(3)}"
    assert hstack("webhooks", "create", name, "--user", user.name, "--toolsets", "terminal,memory")[0] == 0
    line = next(l for l in hstack("webhooks", "list")[1].splitlines() if l.startswith(name))
    assert line.endswith("tools read-only+terminal+memory")
    refused = hstack("webhooks", "create", f"x{name}", "--user", user.name, "--toolsets", "rm -rf")
    assert refused[0] == 1


def test_a_reply_that_finally_failed_shows_in_status(hstack):
    user = make_user(db())
    item = outbox.record(db(), user.id, "callback:gone", "c1", None, "the answer")
    for _ in range(outbox.MAX_ATTEMPTS):
        outbox.report(db(), item.id, False, "callback answered 503", 0)
    code_, out, _ = hstack("status")
    assert code_ == 0 and "gateway replies not delivered" in out and item.id in out and "503" in out
