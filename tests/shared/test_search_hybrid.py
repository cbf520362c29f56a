"""Hybrid search (SEARCH_HYBRID): embeddings find paraphrases keywords miss; runs when the extra is installed."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from shared.stores import sessions
from shared.search import vectors as search_vectors
from shared.search.engine import search_messages
from tests.support.factories import make_session, make_user

needs_extra = pytest.mark.skipif(
    not search_vectors.available(),
    reason="the hybrid extra is not installed (pip install torch==2.13.0 && pip install -r requirements-hybrid.txt)",
)

LINES = ["I adopted a little puppy from the shelter last week.", "The weather is sunny today.",
         "My laptop battery died again this morning."]


def store(db, user_id, lines):
    session = make_session(db, user_id)
    return sessions.append_messages(db, session.id, [{"role": "user", "content": line} for line in lines])


@needs_extra
def test_a_paraphrase_ranks_first_only_with_hybrid_search_and_never_without_a_term(db, user):
    """Embeddings rank; a hit still holds a query term itself, however close its meaning."""
    week = ["I adopted a little puppy from the shelter last week.", "Last week I fixed the garden shed.",
            "The printer jammed again last week."]
    store(db, user.id, week + ["Our pup sleeps all day."])
    hits = search_messages(db, user.id, "Did I get a new dog this week?", hybrid=True)
    assert hits[0].content == week[0]
    assert all(h.coverage > 0 for h in hits)
    assert search_messages(db, user.id, "Did I get a dog?", hybrid=True) == []


@needs_extra
def test_a_reply_ranks_by_what_its_question_meant(db, user):
    """Both replies hold the query's one shared word; the one whose question meant the query ranks first, and
    a message close in meaning that holds no query word is no hit."""
    asked = ["So how many years have you two been husband and wife?",
             "Twelve years now, and it still feels like yesterday!"]
    store(db, user.id, ["Which laptop did you buy in the end?", "The cheap one, it lasted two years."])
    store(db, user.id, asked)
    store(db, user.id, ["My cousin's wedding is next spring in Lisbon."] + LINES)
    hits = [h.content for h in search_messages(db, user.id, "How many years has my sister been married?", hybrid=True)]
    assert hits.index(asked[1]) < hits.index("The cheap one, it lasted two years.")
    assert "My cousin's wedding is next spring in Lisbon." not in hits


@needs_extra
def test_context_is_the_messages_before_in_the_same_session_only():
    import numpy

    scores = numpy.array([0.0, 1.0, 0.0, 0.0, 0.0], dtype="float32")
    # ids out of order, two sessions: "a" holds 7, 9, 11 (in that order), "b" holds 8 and 10
    shared = search_vectors.in_context(scores, [11, 7, 9, 8, 10], ["a", "a", "a", "b", "b"]).tolist()
    assert shared == pytest.approx([0.2, 1.0, 0.5, 0.0, 0.0])


@needs_extra
def test_keyword_matches_still_rank_and_other_users_stay_invisible(db, user):
    store(db, user.id, LINES)
    other = make_user(db)
    store(db, other.id, ["My dog Rex chewed my new shoes."])
    hits = search_messages(db, user.id, "laptop battery", hybrid=True)
    assert hits[0].content == LINES[2]
    assert all(h.content in LINES for h in search_messages(db, user.id, "dog shoes", hybrid=True, limit=50))


@needs_extra
def test_messages_are_embedded_once_and_their_vectors_go_with_them(db, user):
    first, *_ = store(db, user.id, LINES)
    assert search_vectors.embed_missing(db, user.id) == 3
    assert search_vectors.embed_missing(db, user.id) == 0
    with db.write() as s:
        s.execute(text("DELETE FROM messages WHERE id = :id"), {"id": first.id})
    with db.read() as s:
        assert s.execute(text("SELECT count(*) FROM message_vectors WHERE message_id = :id"), {"id": first.id}).scalar() == 0


def test_without_the_extra_hybrid_falls_back_to_keywords(db, user, monkeypatch):
    store(db, user.id, LINES)
    monkeypatch.setattr(search_vectors, "available", lambda: False)
    assert [h.content for h in search_messages(db, user.id, "sunny weather", hybrid=True)] == [LINES[1]]
