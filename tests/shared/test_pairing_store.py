"""Pairing codes by Hermes Agent's rules: alphabet, hashing, expiry, per-user interval, per-platform cap, lockout."""

from __future__ import annotations

import secrets
from datetime import timedelta

import pytest

from shared import clock
from shared.errors import NotFound, RateLimited
from shared.models.gateway import PairingRequest
from shared.stores import pairing
from tests.support.factories import make_user


def platform() -> str:
    """A platform name of this test only: locks and caps are per platform."""
    return f"p{secrets.token_hex(4)}"


def test_codes_are_8_unambiguous_characters_and_only_their_salted_digest_is_stored(db):
    codes = {pairing.new_code() for _ in range(2000)}
    assert all(len(c) == 8 and set(c) <= set(pairing.ALPHABET) for c in codes)
    assert not set("".join(codes)) & set("0O1I"), "no ambiguous characters"
    p = platform()
    issued = pairing.request_code(db, p, "42", "Ann")
    with db.read() as s:
        row = s.query(PairingRequest).filter_by(platform=p).one()
    assert issued.code not in (row.code_hash, row.salt) and len(row.code_hash) == 64


def test_approval_is_case_insensitive_and_binds_to_the_named_user(db):
    p, user = platform(), make_user(db)
    code = pairing.request_code(db, p, "7", "Bo").code
    identity = pairing.approve(db, p, code.lower(), user.name)
    assert identity.user_id == user.id and pairing.find_identity(db, p, "7")[1].id == user.id
    with pytest.raises(NotFound):
        pairing.approve(db, p, code, None)  # a code works once


def test_without_a_user_a_new_one_is_named_after_the_display_name(db):
    p = platform()
    name = f"Zed {secrets.token_hex(2)}"
    code = pairing.request_code(db, p, "8", name).code
    identity = pairing.approve(db, p, code, None)
    assert pairing.find_identity(db, p, "8")[1].name == name.replace(" ", "-")
    assert identity.display_name == name


def test_an_expired_code_is_refused(db):
    p = platform()
    code = pairing.request_code(db, p, "9", "Cy").code
    with clock.travel(timedelta(hours=1, seconds=1)):
        with pytest.raises(NotFound):
            pairing.approve(db, p, code, None)
    assert pairing.find_identity(db, p, "9") is None


def pending_users(db, p: str) -> list[str]:
    return [r.platform_user_id for r in pairing.list_pending(db) if r.platform == p]


def test_one_request_per_user_per_10_minutes_and_3_pending_per_platform(db):
    p = platform()
    assert pairing.request_code(db, p, "1", "a").status == "code"
    assert pairing.request_code(db, p, "1", "a").status == "wait"
    assert pairing.request_code(db, p, "2", "b").status == "code"
    assert pairing.request_code(db, p, "3", "c").status == "code"
    assert pending_users(db, p) == ["1", "2", "3"]
    with clock.travel(timedelta(minutes=11)):
        assert pairing.request_code(db, p, "1", "a").status == "code", "a user may ask again after 10 minutes"
        assert sorted(pending_users(db, p)) == ["1", "2", "3"], "their new request replaced their old one"


def test_three_throwaway_requests_never_close_pairing_the_oldest_gives_way(db):
    """Reproduction: three accounts each ask for a code; a fourth person asked and got `busy` (no code) for as
    long as the three kept asking, and the owner had no way to clear them without their codes."""
    p = platform()
    first = pairing.request_code(db, p, "1", "spam1").code
    for n in ("2", "3"):
        pairing.request_code(db, p, n, f"spam{n}")
    with clock.travel(timedelta(seconds=1)):
        newcomer = pairing.request_code(db, p, "4", "Real person")
    assert newcomer.status == "code"
    assert pending_users(db, p) == ["2", "3", "4"], "the oldest request gave way"
    with pytest.raises(NotFound):
        pairing.approve(db, p, first, None)
    assert pairing.approve(db, p, newcomer.code, None).platform_user_id == "4"


def test_the_owner_denies_a_request_by_its_id_or_platform_user_without_its_code(db):
    """Reproduction: the list shows no codes and deny needed one, so a request the owner could see could not be
    refused; a code-less deny is not a failed attempt either."""
    p = platform()
    spam = pairing.request_code(db, p, "1", "spam1")
    pairing.request_code(db, p, "2", "spam2")
    by_id = next(r for r in pairing.list_pending(db) if r.platform == p and r.platform_user_id == "1")
    assert pairing.deny(db, p, request_id=by_id.id).platform_user_id == "1"
    assert pairing.deny(db, p, platform_user_id="2").display_name == "spam2"
    assert pending_users(db, p) == []
    with pytest.raises(NotFound):
        pairing.approve(db, p, spam.code, None)
    with pytest.raises(NotFound):
        pairing.deny(db, p, request_id=by_id.id)
    with pytest.raises(NotFound):
        pairing.deny(db, platform(), platform_user_id="1")  # another platform's requests are not touched


def test_five_wrong_approvals_lock_the_platform_for_an_hour_even_for_a_valid_code(db):
    p, other = platform(), platform()
    code = pairing.request_code(db, p, "5", "Di").code
    wrong = "".join("A" if ch != "A" else "B" for ch in code)
    for _ in range(5):
        with pytest.raises(NotFound):
            pairing.approve(db, p, wrong, None)
    with pytest.raises(RateLimited):
        pairing.approve(db, p, code, None)
    other_code = pairing.request_code(db, other, "5", "Di").code
    assert pairing.approve(db, other, other_code, None).platform == other, "the lock is per platform"
    with clock.travel(timedelta(minutes=59)):
        code = pairing.request_code(db, p, "6", "Ed").code
        with pytest.raises(RateLimited):
            pairing.approve(db, p, code, None)
    with clock.travel(timedelta(hours=1, minutes=1)):
        assert pairing.approve(db, p, code, None).platform_user_id == "6"
