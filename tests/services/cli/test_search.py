"""`hstack search QUERY` against a live api, with a user's key."""

from __future__ import annotations

from shared.stores import sessions
from tests.support.factories import make_session, make_user


def test_search_prints_one_line_per_hit_best_first(hstack, db):
    user = make_user(db)
    chat = make_session(db, user.id)
    sessions.append_messages(db, chat.id, [{"role": "user", "content": "The router password is on the fridge."},
                                           {"role": "assistant", "content": "Noted: the fridge."}])

    code, out, _ = hstack("search", "where", "is", "the", "router", "password?", "--key", user.key)
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 1 and lines[0].endswith(f"user      {chat.id}  The router password is on the fridge.")

    code, out, _ = hstack("search", "zeppelin", "--key", user.key)
    assert code == 0 and out == "No matching messages.\n"
