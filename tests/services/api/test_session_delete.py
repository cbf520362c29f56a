"""DELETE /v1/sessions/{id} and DELETE /v1/users/{id}: nothing of the forgotten is found anywhere afterwards."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from shared.messaging import events
from shared.clock import utcnow
from shared.ids import new_id
from shared.models import (Approval, GatewayChat, MemorySnapshot, MemoryStagedWrite, MessageEmbedding, MessageVector,
                           ReviewCounter, Turn)
from shared.providers import MemoryProvider, register, unregister
from shared.stores import outbox, sessions, turns
from shared.files import memory as memory_files
from tests.services.api.helpers import error_of
from tests.support.factories import make_session, make_user
from tests.support.search_index import indexed_ids

# Every table and the column that names a session, a turn or a message: read directly after a delete.
SESSION_TABLES = ("messages", "turns", "approvals", "gateway_chats", "memory_snapshots", "review_counters",
                  "memory_staged_writes", "compactions", "reviews")


@pytest.fixture
def ends():
    """A memory provider that records each on_session_end, installed in the api process."""
    calls: list[str] = []

    @register
    class Ends(MemoryProvider):
        name = f"ends-{uuid.uuid4().hex[:6]}"

        def on_session_end(self, ctx):
            calls.append(ctx.session_id)

    Ends.calls = calls
    yield Ends
    unregister(Ends.name)


@pytest.fixture
def provider_of(api_app, settings, ends):
    from shared.providers import build_manager

    api_app.state.providers = build_manager(settings.model_copy(update={"memory_provider": ends.name}))
    yield ends
    api_app.state.providers = None


def full_session(db, redis_client, settings, user_id: str, word: str):
    """A session with every kind of row, stream and file a conversation leaves behind."""
    session = make_session(db, user_id)
    turn, _ = turns.create_turn(db, user_id, session.id, f"tell me about {word}")
    kept = f"{uuid.uuid4().hex[:12]}.log"
    stored = sessions.append_messages(db, session.id, [
        {"role": "user", "content": f"the {word} plan", "turn_id": turn.id, "turn_position": 0},
        {"role": "tool", "content": f"[... the whole output is in .hstack/outputs/{kept} ...]", "turn_id": turn.id,
         "turn_position": 1, "tool_call_id": "c1"},
        {"role": "assistant", "content": f"{word} answered", "turn_id": turn.id, "turn_position": 2}])
    now = utcnow()
    with db.write() as s:
        s.get(Turn, turn.id).status = "completed"
        s.add(Approval(id=new_id("apr"), user_id=user_id, session_id=session.id, turn_id=turn.id, tool_call_id="c1",
                       command="rm -rf x", reason="deletes", rule="dangerous"))
        s.add(GatewayChat(key=f"agent:main:telegram:dm:{word}", user_id=user_id, session_id=session.id))
        s.add(MemorySnapshot(session_id=session.id, target="memory", known=[word]))
        s.add(ReviewCounter(session_id=session.id))
        s.add(MemoryStagedWrite(id=new_id("msw"), user_id=user_id, session_id=session.id, target="memory",
                                summary=word, request={}, expires_at=now + timedelta(hours=1)))
        s.add(MessageVector(message_id=stored[0].id, model="m", vector=b"\0" * 8))
        s.add(MessageEmbedding(message_id=stored[2].id, model="m", dimensions=2, vector=b"\0" * 8))
    item = outbox.record(db, user_id, "telegram:1", "1", turn.id, f"{word} answered")
    events.publish(redis_client, turn.id, "turn.completed", {"output": word}, ttl_seconds=600)
    events.hold_notice(redis_client, session.id, "review.completed", {"summary": word})
    outputs = Path(settings.data_dir) / "users" / user_id / "workspace" / ".hstack" / "outputs"
    outputs.mkdir(parents=True, exist_ok=True)
    (outputs / kept).write_text(f"{word} output")
    return session, turn, item, outputs / kept


def rows_naming(db, session_id: str, turn_id: str, message_ids: list[int]) -> dict[str, int]:
    """Rows still naming the session, its turn or its messages, read from the tables themselves."""
    found = {}
    with db.engine.connect() as conn:
        for table in SESSION_TABLES:
            found[table] = conn.execute(text(f"SELECT count(*) FROM {table} WHERE session_id = :s"),
                                        {"s": session_id}).scalar()
        found["sessions"] = conn.execute(text("SELECT count(*) FROM sessions WHERE id = :s"),
                                         {"s": session_id}).scalar()
        found["gateway_outbox"] = conn.execute(text("SELECT count(*) FROM gateway_outbox WHERE turn_id = :t"),
                                               {"t": turn_id}).scalar()
        ids = ",".join(str(i) for i in message_ids)
        index = (["messages_fts", "messages_cjk"] if db.is_sqlite else ["message_search"])
        for table in index + ["message_vectors", "message_embeddings"]:
            column = "rowid" if table.startswith("messages_") else "message_id"
            found[table] = conn.execute(text(f"SELECT count(*) FROM {table} WHERE {column} IN ({ids})")).scalar()
    return found


def test_a_deleted_session_is_found_nowhere(client, db, redis_client, settings, user, provider_of):
    """Reproduction: DELETE /v1/sessions/{id} answered 405 and every row, index entry, stream and kept output stayed."""
    word = f"zebra{uuid.uuid4().hex[:8]}"
    session, turn, _, kept = full_session(db, redis_client, settings, user.id, word)
    message_ids = [m.id for m in sessions.list_messages(db, session.id)]
    memory = memory_files.memory_dir(settings.data_dir, user.id)
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "MEMORY.md").write_text(f"learned: {word}\n")
    assert len(indexed_ids(db, word)) > 0
    assert client.get("/v1/search", headers=user.headers, params={"q": word}).json()["data"]

    response = client.delete(f"/v1/sessions/{session.id}", headers=user.headers)

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["deleted"] is True and body["messages"] == 3 and body["turns"] == 1
    assert "Memory entries and skills" in body["kept"]
    assert client.get(f"/v1/sessions/{session.id}", headers=user.headers).status_code == 404
    assert client.get("/v1/search", headers=user.headers, params={"q": word}).json()["data"] == []
    assert set(rows_naming(db, session.id, turn.id, message_ids).values()) == {0}
    assert len(indexed_ids(db, word)) == 0
    assert not redis_client.exists(events.stream_key(turn.id), events.notices_key(session.id))
    assert not kept.exists()
    assert (memory / "MEMORY.md").read_text() == f"learned: {word}\n"  # what was learned stays
    assert provider_of.calls == [session.id]
    assert client.delete(f"/v1/sessions/{session.id}", headers=user.headers).status_code == 404
    assert provider_of.calls == [session.id]  # once


def test_another_users_delete_is_not_found_and_removes_nothing(client, db, redis_client, settings, user):
    word = f"otter{uuid.uuid4().hex[:8]}"
    theirs = make_user(db)
    session, turn, _, kept = full_session(db, redis_client, settings, theirs.id, word)

    response = client.delete(f"/v1/sessions/{session.id}", headers=user.headers)

    assert response.status_code == 404 and error_of(response)["code"] == "session_not_found"
    assert client.get(f"/v1/sessions/{session.id}", headers=theirs.headers).status_code == 200
    assert len(indexed_ids(db, word)) > 0 and kept.exists() and redis_client.exists(events.stream_key(turn.id))


def test_deleting_cancels_the_sessions_queued_turn_first(client, db, user, provider_of):
    session = make_session(db, user.id)
    turn, _ = turns.create_turn(db, user.id, session.id, "still queued")

    assert client.delete(f"/v1/sessions/{session.id}", headers=user.headers).status_code == 200
    assert client.get(f"/v1/turns/{turn.id}", headers=user.headers).status_code == 404
    assert provider_of.calls == [session.id]


def test_an_ended_session_does_not_hear_its_end_twice(client, db, user, provider_of):
    session = make_session(db, user.id)
    sessions.claim_end(db, session.id)  # /new already fired on_session_end

    assert client.delete(f"/v1/sessions/{session.id}", headers=user.headers).status_code == 200
    assert provider_of.calls == []


def test_deleting_a_user_forgets_every_session_row_key_and_file(client, db, redis_client, settings, admin_headers):
    """Reproduction: there was no DELETE /v1/users/{id}; a user's rows and DATA_DIR/users/<id> stayed for ever."""
    word = f"heron{uuid.uuid4().hex[:8]}"
    gone = make_user(db)
    first, turn, _, _ = full_session(db, redis_client, settings, gone.id, word)
    second, _, _, _ = full_session(db, redis_client, settings, gone.id, word + "b")
    message_ids = [m.id for m in sessions.list_messages(db, first.id)]
    root = Path(settings.data_dir) / "users" / gone.id
    assert client.get("/v1/sessions", headers=gone.headers).status_code == 200

    response = client.delete(f"/v1/users/{gone.id}", headers=admin_headers)

    assert response.status_code == 200, response.text
    assert response.json()["sessions"] == 2
    assert client.get("/v1/sessions", headers=gone.headers).status_code == 401
    assert set(rows_naming(db, first.id, turn.id, message_ids).values()) == {0}
    assert len(indexed_ids(db, word)) == 0 and len(indexed_ids(db, word + "b")) == 0
    with db.engine.connect() as conn:
        for table in ("users", "api_keys", "sessions", "gateway_outbox", "memory_staged_writes"):
            column = "id" if table == "users" else "user_id"
            assert conn.execute(text(f"SELECT count(*) FROM {table} WHERE {column} = :u"), {"u": gone.id}).scalar() == 0
    assert not root.exists()
    assert client.delete(f"/v1/users/{gone.id}", headers=admin_headers).status_code == 404


def test_only_the_admin_deletes_users(client, db, user):
    other = make_user(db)
    assert client.delete(f"/v1/users/{other.id}", headers=user.headers).status_code in (401, 403)
    assert client.get("/v1/sessions", headers=other.headers).status_code == 200
