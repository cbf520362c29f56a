"""Hybrid search from the provider's /v1/embeddings (EMBEDDINGS_MODEL): embeddings rank, every hit holds a term."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from shared.search import embeddings as search_embeddings
from shared.search.engine import search_messages
from shared.search.scope import Scope
from shared.stores import message_embeddings, sessions
from tests.support.factories import make_session, make_user

PUPPY = "Last week I finally brought home a puppy from the shelter."
LAPTOP = "Last week my laptop battery died twice."
WEATHER = "The weather last week was sunny every single day."
PUP_ONLY = "The new pup sleeps all day."  # close in meaning to a dog question, but holds none of its words


@pytest.fixture
def embeddings_on(settings, embeddings_provider, monkeypatch):
    """The process's settings with the scripted provider as hybrid search's source."""
    embeddings_provider.failures.clear()
    monkeypatch.setattr(settings, "embeddings_model", "fake-embed")
    monkeypatch.setattr(settings, "embeddings_base_url", embeddings_provider.base_url)
    monkeypatch.setattr(settings, "embeddings_batch_size", 2)
    return settings


def store(db, user_id, *lines, role="user"):
    chat = make_session(db, user_id)
    return sessions.append_messages(db, chat.id, [{"role": role, "content": line} for line in lines])


def test_embeddings_lift_the_message_that_means_the_question_among_those_holding_its_words(
        db, user, embeddings_on):
    stored = store(db, user.id, LAPTOP, WEATHER, PUPPY, PUP_ONLY)
    assert search_embeddings.embed_session(db, embeddings_on, stored[0].session_id) == 4
    keyword = [h.content for h in search_messages(db, user.id, "did I get a dog last week?", hybrid=False)]
    hybrid = search_messages(db, user.id, "did I get a dog last week?")  # on by default with EMBEDDINGS_MODEL
    assert keyword[0] != PUPPY and hybrid[0].content == PUPPY
    # PUP_ONLY is the closest in meaning, but holds no query term itself: never a hit
    assert PUP_ONLY not in [h.content for h in hybrid] and all(h.coverage > 0 for h in hybrid)


def test_a_provider_down_at_search_time_answers_by_keywords(db, user, embeddings_on, embeddings_provider):
    stored = store(db, user.id, LAPTOP, PUPPY)
    search_embeddings.embed_session(db, embeddings_on, stored[0].session_id)
    embeddings_provider.fail_next(503)
    hits = search_messages(db, user.id, "laptop battery")
    assert [h.content for h in hits] == [LAPTOP]


def test_a_model_without_any_provider_url_answers_by_keywords(db, user, embeddings_on, monkeypatch):
    monkeypatch.setattr(embeddings_on, "embeddings_base_url", None)
    monkeypatch.setattr(embeddings_on, "llm_base_url", None)
    store(db, user.id, LAPTOP)
    assert [h.content for h in search_messages(db, user.id, "laptop")] == [LAPTOP]


def test_messages_not_embedded_yet_are_still_found_by_keywords(db, user, embeddings_on):
    store(db, user.id, LAPTOP, PUPPY)
    assert [h.content for h in search_messages(db, user.id, "puppy shelter")] == [PUPPY]


def test_a_session_is_embedded_once_tool_rows_and_blanks_never_and_vectors_go_with_the_message(
        db, user, embeddings_on, embeddings_provider):
    chat = make_session(db, user.id)
    rows = sessions.append_messages(db, chat.id, [
        {"role": "user", "content": PUPPY}, {"role": "assistant", "content": "   "},
        {"role": "assistant", "content": LAPTOP}, {"role": "tool", "content": "tool output", "tool_call_id": "c1"},
        {"role": "user", "content": WEATHER}])
    before = len(embeddings_provider.inputs())
    assert search_embeddings.embed_session(db, embeddings_on, chat.id) == 3
    assert embeddings_provider.inputs()[before:] == [PUPPY, LAPTOP, WEATHER]  # batches of 2, in order
    assert search_embeddings.embed_session(db, embeddings_on, chat.id) == 0
    with db.write() as s:
        s.execute(text("DELETE FROM messages WHERE id = :id"), {"id": rows[0].id})
    with db.read() as s:
        left = s.execute(text("SELECT count(*) FROM message_embeddings WHERE message_id = :id"),
                         {"id": rows[0].id}).scalar()
    assert left == 0


def test_a_new_model_embeds_again_and_old_vectors_never_mix_in(
        db, user, embeddings_on, monkeypatch, embeddings_provider):
    stored = store(db, user.id, PUPPY, LAPTOP)
    search_embeddings.embed_session(db, embeddings_on, stored[0].session_id)
    monkeypatch.setattr(embeddings_on, "embeddings_model", "fake-embed-2")
    monkeypatch.setattr(embeddings_on, "embeddings_dimensions", 32)
    assert search_embeddings.embed_session(db, embeddings_on, stored[0].session_id) == 2
    with db.read() as s:
        rows = s.execute(text("SELECT model, dimensions FROM message_embeddings WHERE message_id = :id"),
                         {"id": stored[0].id}).all()
    assert [tuple(r) for r in rows] == [("fake-embed-2", 32)]
    assert search_messages(db, user.id, "puppy")[0].content == PUPPY


def test_another_users_embedded_messages_stay_invisible(db, user, embeddings_on):
    other = make_user(db)
    theirs = store(db, other.id, "My puppy Rex chewed my shoes last week.")
    search_embeddings.embed_session(db, embeddings_on, theirs[0].session_id)
    mine = store(db, user.id, LAPTOP)
    search_embeddings.embed_session(db, embeddings_on, mine[0].session_id)
    assert [h.content for h in search_messages(db, user.id, "puppy last week", limit=50)] == [LAPTOP]


def test_a_message_forgotten_while_it_was_embedded_is_skipped(db, user, embeddings_on):
    stored = store(db, user.id, PUPPY, LAPTOP)
    with db.write() as s:
        s.execute(text("DELETE FROM messages WHERE id = :id"), {"id": stored[0].id})
    assert message_embeddings.add(db, "fake-embed", 2, [(stored[0].id, b"\0" * 8), (stored[1].id, b"\0" * 8)]) == 1


def test_backfill_walks_every_user_and_reports_progress(db, embeddings_on):
    users = [make_user(db) for _ in range(2)]
    for u in users:
        store(db, u.id, PUPPY, LAPTOP, WEATHER)
    counts: list[int] = []
    search_embeddings.backfill(db, embeddings_on, counts.append)
    assert sum(counts) > 0 and max(counts) <= 2
    assert message_embeddings.count_missing(db, "fake-embed") == 0
    assert search_embeddings.backfill(db, embeddings_on) == 0


def test_a_long_history_compares_only_its_newest_vectors(db, user, embeddings_on, monkeypatch):
    """Past MAX_COMPARED vectors a search reads the newest only: the older ones rank by keywords alone."""
    old = store(db, user.id, PUPPY)
    new = store(db, user.id, LAPTOP, WEATHER)
    for rows in (old, new):
        search_embeddings.embed_session(db, embeddings_on, rows[0].session_id)
    monkeypatch.setattr(search_embeddings, "MAX_COMPARED", 2)
    scope = Scope(user.id, None, None, ("user", "assistant"))
    assert set(search_embeddings.similarities(db, embeddings_on, scope, "dog")) == {m.id for m in new}


def test_a_backfill_stopped_half_way_keeps_what_it_stored_and_the_next_run_goes_on(
        db, embeddings_on, embeddings_provider):
    search_embeddings.backfill(db, embeddings_on)  # whatever earlier tests left
    owner = make_user(db)
    store(db, owner.id, PUPPY, LAPTOP, WEATHER, "one more", "and the last")

    class Stop(Exception):
        pass

    def stop_after_first(count: int) -> None:
        raise Stop  # as if the process were killed right after its first batch was committed

    with pytest.raises(Stop):
        search_embeddings.backfill(db, embeddings_on, stop_after_first)
    assert message_embeddings.count_missing(db, "fake-embed") == 3
    before = len(embeddings_provider.inputs())
    assert search_embeddings.backfill(db, embeddings_on) == 3
    assert len(embeddings_provider.inputs()) - before == 3  # nothing embedded twice
