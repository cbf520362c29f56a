"""`hstack memory show|add|remove` against a live api, with a user's key."""

from __future__ import annotations

from tests.support.factories import make_user


def test_add_show_and_remove_round_trip_through_the_api(hstack, db):
    user = make_user(db)
    code, out, _ = hstack("memory", "add", "Prefers dark mode", "--target", "user", "--key", user.key)
    assert code == 0 and out == "Entry added. USER PROFILE (who the user is): 1% — 17/1,375 chars, 1 entry.\n"
    hstack("memory", "add", "Build with make\nthen test", "--key", user.key)

    code, out, _ = hstack("memory", "show", "--key", user.key)
    assert code == 0
    assert out == ("MEMORY (your personal notes) [1% — 25/2,200 chars]\n"
                   "  1. Build with make\n     then test\n"
                   "USER PROFILE (who the user is) [1% — 17/1,375 chars]\n"
                   "  1. Prefers dark mode\n")

    code, out, _ = hstack("memory", "remove", "dark", "--target", "user", "--key", user.key)
    assert code == 0 and out.startswith("Entry removed.")
    _, shown, _ = hstack("memory", "show", "--target", "user", "--key", user.key)
    assert shown == "USER PROFILE (who the user is) [0% — 0/1,375 chars]\n  (empty)\n"


def test_the_key_comes_from_the_environment_and_errors_are_one_line(hstack, db, monkeypatch):
    user = make_user(db)
    monkeypatch.setenv("HSTACK_API_KEY", user.key)
    code, out, err = hstack("memory", "remove", "nothing like this")
    assert code == 1 and out == ""
    assert err == "hstack: No entry matched 'nothing like this'. (memory_no_match, HTTP 409).\n"


def test_without_a_key_the_command_says_how_to_get_one(hstack, monkeypatch):
    monkeypatch.delenv("HSTACK_API_KEY", raising=False)
    code, _, err = hstack("memory", "show")
    assert code == 1 and "No API key" in err
