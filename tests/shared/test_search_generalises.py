"""Search ranks by what a question is about, not by a word the user writes in every message."""

from __future__ import annotations

from shared.stores import sessions
from shared.stores.search import search_messages
from tests.support.factories import make_session, make_user

TOPIC = ("I spent the whole of last Saturday afternoon with my sister at the studio downtown, "
         "where we finally got our hands on the wheel in a beginners pottery workshop that ran late, "
         "and we laughed the entire time even though every single bowl collapsed before we could finish it")


def test_a_word_in_most_of_the_users_messages_does_not_drown_the_topic(db):
    """The user's own name heads each of their messages and is rare on the server as a whole, so the
    index weighs it like a topic word; the long message about pottery must still come first."""
    other = make_user(db)
    elsewhere = make_session(db, other.id)
    sessions.bulk_insert_messages(db, [
        {"session_id": elsewhere.id, "role": "user", "content": f"weather report {i}: mild and dry"}
        for i in range(1500)
    ])
    owner = make_user(db)
    chat = make_session(db, owner.id)
    sessions.bulk_insert_messages(db, [
        {"session_id": chat.id, "role": "user", "content": f"Zara: Zara checking in, note {i}"} for i in range(150)
    ] + [{"session_id": chat.id, "role": "user", "content": TOPIC}])
    hits = search_messages(db, owner.id, "What did Zara tell me about pottery?", limit=5)
    assert hits and hits[0].content == TOPIC


def test_messages_holding_only_the_common_word_are_still_found_when_nothing_else_matches(db):
    owner = make_user(db)
    chat = make_session(db, owner.id)
    sessions.bulk_insert_messages(db, [
        {"session_id": chat.id, "role": "user", "content": f"Zara: Zara checking in, note {i}"} for i in range(150)
    ])
    hits = search_messages(db, owner.id, "Zara submarine", limit=5)
    assert len(hits) == 5 and all("Zara" in h.content for h in hits)
