"""Provider embeddings off the turn's path: a finished turn sends `embed_messages` (queue review) for its
session; the reviewer's task embeds what the session lacks, and a provider failure never touches the turn."""

from __future__ import annotations

import pytest
from sqlalchemy import text as sql

from shared.queue.names import EMBED_MESSAGES, QUEUE_REVIEW, ROUTES
from shared.search.engine import search_messages
from services.worker.review import embed
from tests.fakes.model import text
from tests.services.worker.reviewing import turns
from tests.support.waiting import wait_until
from tests.support.worker import inprocess_worker


@pytest.fixture
def embeddings_on(settings, embeddings_provider, monkeypatch):
    embeddings_provider.failures.clear()
    monkeypatch.setattr(settings, "embeddings_model", "fake-embed")
    monkeypatch.setattr(settings, "embeddings_base_url", embeddings_provider.base_url)
    monkeypatch.setattr(settings, "memory_review_interval", 0)
    monkeypatch.setattr(settings, "skill_review_interval", 0)
    return settings


def embedded(db, session_id: str) -> int:
    with db.read() as s:
        return s.execute(sql("SELECT count(*) FROM message_embeddings AS e JOIN messages AS m ON m.id = e.message_id "
                             "WHERE m.session_id = :s"), {"s": session_id}).scalar()


def test_a_turn_sends_its_session_to_be_embedded_after_its_messages_are_stored(
        db, user, session, model, make_runtime, embeddings_on, monkeypatch):
    sent = []
    monkeypatch.setattr(embed, "enqueue", lambda name, payload: sent.append(
        (name, payload.model_dump(), embedded(db, payload.session_id), _stored(db, payload.session_id))))
    model.script(text("Congratulations on the puppy!"))
    [turn] = turns(db, make_runtime(), user.id, session.id, "I brought home a puppy last week")
    assert turn.status == "completed"
    [(name, payload, vectors, stored)] = sent
    assert (name, ROUTES[name]["queue"], payload) == (EMBED_MESSAGES, QUEUE_REVIEW, {"session_id": session.id})
    assert (vectors, stored) == (0, 2)  # committed first, embedded later: nothing on the turn's path


def test_without_an_embeddings_model_nothing_is_sent(db, user, session, model, make_runtime, settings, monkeypatch):
    sent = []
    monkeypatch.setattr(settings, "embeddings_model", None)
    monkeypatch.setattr(embed, "enqueue", lambda name, payload: sent.append(name))
    model.script(text("ok"))
    turns(db, make_runtime(), user.id, session.id, "hello")
    assert sent == []


def test_the_reviewer_embeds_the_session_through_the_real_queue(db, user, session, model, make_runtime,
                                                                 embeddings_on):
    model.script(text("Congratulations on the puppy!"))
    turns(db, make_runtime(), user.id, session.id, "I brought home a puppy last week")
    with inprocess_worker(queues=(QUEUE_REVIEW,), concurrency=2):
        wait_until(lambda: embedded(db, session.id) == 2, timeout=30, what="the session's messages embedded")
    assert search_messages(db, user.id, "puppy")[0].session_id == session.id


def test_a_provider_failure_leaves_the_messages_to_the_next_round(db, user, session, model, make_runtime,
                                                                   embeddings_on, embeddings_provider,
                                                                   monkeypatch):
    monkeypatch.setattr(embed, "enqueue", lambda *_: None)
    model.script(text("noted"))
    turns(db, make_runtime(), user.id, session.id, "my laptop died")
    embeddings_provider.fail_next(401)
    runtime = make_runtime()
    assert embed.embed(runtime, session.id) == 0 and embedded(db, session.id) == 0
    assert embed.embed(runtime, session.id) == 2


def test_a_malformed_or_unknown_session_payload_is_dropped_quietly(db, embeddings_on):
    from services.worker import tasks

    assert tasks.embed_messages.run(session_id=123, extra="x") == 0
    assert tasks.embed_messages.run(session_id="ses_does_not_exist") == 0


def _stored(db, session_id: str) -> int:
    with db.read() as s:
        return s.execute(sql("SELECT count(*) FROM messages WHERE session_id = :s AND role IN ('user', 'assistant')"),
                         {"s": session_id}).scalar()
