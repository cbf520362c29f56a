"""The embeddings' store, without the hybrid extra: which messages lack a vector, and storing vectors once."""

from __future__ import annotations

from shared.stores import message_vectors, sessions
from tests.support.factories import make_session, make_user


def test_only_the_users_searchable_messages_without_a_vector_are_listed_and_stored_once(db, user):
    """embed_missing's reads and writes moved out of the search engine: the same rows, the same insert."""
    chat = make_session(db, user.id)
    rows = sessions.append_messages(db, chat.id, [{"role": "user", "content": "first"},
                                                  {"role": "assistant", "content": "  "},
                                                  {"role": "assistant", "content": "second"}])
    other = make_user(db)
    sessions.append_messages(db, make_session(db, other.id).id, [{"role": "user", "content": "not yours"}])

    missing = message_vectors.missing(db, user.id)
    assert missing == [(rows[0].id, "first"), (rows[2].id, "second")]

    message_vectors.add(db, "test-model", [(rows[0].id, b"\x00" * 4)])
    message_vectors.add(db, "test-model", [(rows[0].id, b"\x01" * 4), (rows[2].id, b"\x02" * 4)])
    assert message_vectors.missing(db, user.id) == []
    assert [m for m, _ in message_vectors.missing(db, other.id)] != []
