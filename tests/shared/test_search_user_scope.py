"""A user with little history searches their own messages, whatever another user wrote with the same words.

One other user holds thousands of messages made of the words the small users write (more than the
backends' ranking budget), on SQLite and Postgres alike.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from shared.stores import sessions
from shared.search import postgres as search_postgres, sqlite as search_sqlite
from shared.search.engine import search_messages
from tests.support.factories import make_session, make_user
from tests.support.statements import statements_of

CROWD = 3_200  # the other user's messages: more than either backend's BUDGET
WORDS = "zeppelin marmalade heliotrope lighthouse"


@pytest.fixture(scope="module")
def crowd(db):
    """Another user (`.user`, `.chats`) whose every message holds the small users' words."""
    assert CROWD > max(search_sqlite.BUDGET, search_postgres.BUDGET)
    other = make_user(db)
    chats = [make_session(db, other.id) for _ in range(CROWD // 100)]
    rows = [{"session_id": chats[i % len(chats)].id, "role": "user" if i % 2 == 0 else "assistant",
             "content": f"the crowd's {WORDS} note number {i}"} for i in range(CROWD)]
    sessions.bulk_insert_messages(db, rows)
    return SimpleNamespace(user=other, chats=chats)


def recall(db, user_id: str, query: str, current: str, **kwargs):
    """The search as the recall provider makes it: limit 10, pool 40, the current session excluded."""
    return search_messages(db, user_id, query, limit=10, pool=40, exclude_session_id=current, **kwargs)


def test_a_new_users_single_earlier_message_is_found_beside_thousands_of_anothers(db, crowd):
    user = make_user(db)
    earlier = make_session(db, user.id)
    said = "I keep the zeppelin marmalade in the lighthouse."
    sessions.append_messages(db, earlier.id, [{"role": "user", "content": said}])
    current = make_session(db, user.id)

    hits = recall(db, user.id, "where did I keep the zeppelin marmalade?", current.id)

    assert [h.content for h in hits] == [said]
    assert hits[0].coverage == 1.0


def test_a_small_scope_never_shows_another_users_message(db, crowd):
    user = make_user(db)
    chat = make_session(db, user.id)
    sessions.append_messages(db, chat.id, [{"role": "user", "content": "a heliotrope by the window"},
                                           {"role": "assistant", "content": "heliotrope smells of vanilla"}])
    current = make_session(db, user.id)

    mine = {h.message_id for h in recall(db, user.id, f"{WORDS} note number", current.id)}
    assert {h.content for h in recall(db, user.id, WORDS, current.id)} == {"a heliotrope by the window",
                                                                          "heliotrope smells of vanilla"}
    assert len(mine) == 2
    assert recall(db, user.id, "crowd's note number", current.id) == []
    assert search_messages(db, user.id, '"zeppelin marmalade"') == []


def test_session_exclusion_and_role_narrow_a_small_scope(db, crowd):
    user = make_user(db)
    first, second = make_session(db, user.id), make_session(db, user.id)
    sessions.append_messages(db, first.id, [{"role": "user", "content": "the lighthouse keeper waved"},
                                            {"role": "assistant", "content": "a lighthouse guards the bay"}])
    sessions.append_messages(db, second.id, [{"role": "user", "content": "we painted the lighthouse red"}])

    assert {h.session_id for h in search_messages(db, user.id, "lighthouse", session_id=second.id)} == {second.id}
    assert {h.content for h in recall(db, user.id, "lighthouse", second.id)} == {"the lighthouse keeper waved",
                                                                                 "a lighthouse guards the bay"}
    assert [h.content for h in search_messages(db, user.id, "lighthouse", role="assistant")] == [
        "a lighthouse guards the bay"]
    assert [h.content for h in search_messages(db, user.id, '"lighthouse keeper"', exclude_session_id=second.id)] == [
        "the lighthouse keeper waved"]


def test_a_small_scopes_required_terms_list_its_matches_newest_first(db, crowd):
    user = make_user(db)
    chat = make_session(db, user.id)
    sessions.append_messages(db, chat.id, [{"role": "user", "content": f"zeppelin marmalade jar {i}"}
                                           for i in range(4)])

    hits = search_messages(db, user.id, '"zeppelin marmalade"')

    assert [h.content for h in hits] == [f"zeppelin marmalade jar {i}" for i in reversed(range(4))]


def test_an_empty_scope_answers_nothing_without_a_full_text_query(db, crowd):
    user = make_user(db)
    only = make_session(db, user.id)
    sessions.append_messages(db, only.id, [{"role": "user", "content": "zeppelin marmalade, once"}])
    newcomer = make_user(db)  # made before listening: only the searches' statements are seen
    with statements_of(db) as statements:
        assert recall(db, newcomer.id, WORDS, "no-such-session") == []
        assert recall(db, user.id, WORDS, only.id) == []  # the one session holding anything is the current one
        assert search_messages(db, user.id, "zeppelin", role="assistant") == []
    assert statements
    assert not [s for s in statements if "MATCH" in s or "@@" in s]
    with statements_of(db) as control:  # a scope holding a match: its full-text query is seen
        assert search_messages(db, user.id, "zeppelin")
    assert [s for s in control if "MATCH" in s or "@@" in s]


def test_one_session_of_a_long_history_is_searched_on_its_own(db, crowd):
    """A session narrows the scope below the budget however long the history: only its matches come back."""
    chat = crowd.chats[7]
    hits = search_messages(db, crowd.user.id, f"{WORDS} note", session_id=chat.id, limit=100)
    assert len(hits) == 100
    assert {h.session_id for h in hits} == {chat.id}
