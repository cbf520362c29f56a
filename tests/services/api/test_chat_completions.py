"""The OpenAI-compatible endpoint, driven by the official `openai` package against a real worker."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import httpx
import openai
import pytest

from shared.queue.app import enqueue
from shared.stores import reviews, sessions, turns
from tests.fakes.model import fail, text, tool_call
from tests.services.api.helpers import EnqueueRecorder
from tests.support.factories import make_session, make_user
from tests.support.live import serve_api
from tests.support.waiting import wait_until


def requests_saying(model, words: str) -> list[dict]:
    """Bodies of the model requests whose latest user message contains `words`."""
    return [r.body for r in model.requests if r.body.get("messages")
            and words in str([m for m in r.body["messages"] if m.get("role") == "user"][-1].get("content"))]


def test_a_completion_returns_the_models_text(oai, model, db, user):
    model.on("capital", text("Paris is the capital."))
    raw = oai.chat.completions.with_raw_response.create(
        model="scripted",
        messages=[{"role": "system", "content": "Answer in one sentence."},
                  {"role": "user", "content": "What is the capital of France?"}],
    )
    completion = raw.parse()
    assert completion.choices[0].message.content == "Paris is the capital."
    assert completion.choices[0].finish_reason == "stop"
    assert completion.object == "chat.completion" and completion.model == "scripted"
    turn_id = raw.headers["x-turn-id"]
    assert completion.id == f"chatcmpl-{turn_id}"
    assert completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens
    stored = sessions.get_session(db, user.id, raw.headers["x-session-id"])
    assert stored.source == "chat_completions" and stored.instructions == "Answer in one sentence."


def test_a_streamed_completion_joins_to_the_full_text(oai, model):
    model.on("poem", text("Roses are red, violets are blue."))
    stream = oai.chat.completions.create(
        model="scripted",
        messages=[{"role": "user", "content": [{"type": "text", "text": "A short poem, please"}]}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == "Roses are red, violets are blue."
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0


def test_x_session_id_continues_the_stored_session(oai, model):
    model.on("first", text("First answer."))
    model.on("second", text("Second answer."))
    raw = oai.chat.completions.with_raw_response.create(
        model="scripted", messages=[{"role": "user", "content": "first question"}])
    session_id = raw.headers["x-session-id"]

    again = oai.chat.completions.with_raw_response.create(
        model="scripted",
        messages=[{"role": "user", "content": "ignored client history"}, {"role": "user", "content": "second question"}],
        extra_headers={"X-Session-Id": session_id},
    )
    assert again.headers["x-session-id"] == session_id
    assert again.parse().choices[0].message.content == "Second answer."
    sent = requests_saying(model, "second question")[-1]["messages"]
    contents = [m.get("content") for m in sent]
    assert "first question" in contents and "First answer." in contents
    assert "ignored client history" not in json.dumps(sent)


def test_client_history_seeds_a_new_session(oai, model):
    model.on("now", text("Noted."))
    oai.chat.completions.create(
        model="scripted",
        messages=[{"role": "user", "content": "my name is Ada"}, {"role": "assistant", "content": "Hello Ada."},
                  {"role": "user", "content": "and now?"}],
    )
    sent = requests_saying(model, "and now?")[-1]["messages"]
    conversation = [(m["role"], m.get("content")) for m in sent if m["role"] != "system"]
    assert conversation[:2] == [("user", "my name is Ada"), ("assistant", "Hello Ada.")]


def test_tool_activity_streams_as_comments_openai_clients_ignore(chat_api, model, user):
    model.on("look", tool_call([("read_file", {"path": "notes.txt"})]), text("There is no notes file."))
    body = {"model": "scripted", "stream": True, "messages": [{"role": "user", "content": "look at notes.txt"}]}
    with httpx.stream("POST", f"{chat_api}/v1/chat/completions", headers=user.headers, json=body,
                      timeout=30) as response:
        lines = [line for line in response.iter_lines() if line]
    assert ": tool read_file started" in lines
    assert any(line.startswith(": tool read_file ") and line != ": tool read_file started" for line in lines)
    data = [line[len("data: "):] for line in lines if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    deltas = [json.loads(d)["choices"][0]["delta"].get("content") or "" for d in data[:-1]]
    assert "".join(deltas).endswith("There is no notes file.")


def test_a_streamed_answer_with_unicode_line_separators_survives_a_line_splitting_client(chat_api, model, user):
    answer = "first\u2028second\u2029third\u0085fourth"
    model.on("separators", text(answer))
    body = {"model": "scripted", "stream": True, "messages": [{"role": "user", "content": "separators, please"}]}
    with httpx.stream("POST", f"{chat_api}/v1/chat/completions", headers=user.headers, json=body,
                      timeout=30) as response:
        data = [line[len("data: "):] for line in response.iter_lines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == answer


def test_a_failed_turn_is_a_502_in_openai_shape(oai, model, db, user):
    model.on("doomed", fail(status=401, message="bad provider key"))
    with pytest.raises(openai.APIStatusError) as caught:
        oai.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "doomed request"}])
    assert caught.value.status_code == 502
    assert caught.value.body["code"] == "model_auth_failed"
    failed = caught.value.response.headers["x-turn-id"]
    assert turns.get_turn(db, user.id, failed).status == "failed"


def test_a_failed_turn_mid_stream_sends_an_error_then_done(oai, model):
    model.on("doomed", fail(status=401, message="bad provider key"))
    stream = oai.chat.completions.create(
        model="scripted", messages=[{"role": "user", "content": "doomed stream"}], stream=True)
    with pytest.raises(openai.APIError) as caught:
        list(stream)
    assert caught.value.body["code"] == "model_auth_failed"


def test_a_bad_key_is_an_authentication_error(chat_api):
    with openai.OpenAI(base_url=f"{chat_api}/v1", api_key="hsk_wrong", max_retries=0) as client:
        with pytest.raises(openai.AuthenticationError) as caught:
            client.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.body["code"] == "invalid_api_key"


def test_another_users_session_is_not_found(oai, db):
    theirs = make_session(db, make_user(db).id)
    with pytest.raises(openai.NotFoundError):
        oai.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "hi"}],
                                    extra_headers={"X-Session-Id": theirs.id})


def test_a_request_not_ending_with_a_user_message_is_refused(oai):
    with pytest.raises(openai.BadRequestError) as caught:
        oai.chat.completions.create(model="scripted", messages=[{"role": "assistant", "content": "hi"}])
    assert caught.value.body["param"] == "messages"


def test_models_lists_the_served_model(oai, settings):
    listed = oai.models.list()
    assert [m.id for m in listed.data] == [settings.llm_model]
    assert listed.data[0].owned_by == "hermes-stack"


def test_a_turn_slower_than_the_timeout_is_a_504(chat_api, settings, model, user):
    from services.api.main import create_app

    model.on("slow", text("too late", latency=2))
    app = create_app(settings.model_copy(update={"chat_completion_timeout_seconds": 0.3}))
    app.state.enqueue = enqueue
    with serve_api(app) as base:  # chat_api's worker runs the turn
        with openai.OpenAI(base_url=f"{base}/v1", api_key=user.key, max_retries=0) as client:
            with pytest.raises(openai.APIStatusError) as caught:
                client.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "slow one"}])
    assert caught.value.status_code == 504
    assert caught.value.body["code"] == "timeout"
    assert caught.value.response.headers["x-turn-id"] in caught.value.body["message"]


def test_a_waiting_completion_whose_client_left_stops_waiting_and_the_turn_stays(settings, db, user):
    """A client that gives up on a non-streamed completion (timeout, ^C) closed its connection: the api stops
    waiting at its next quiet interval instead of holding the turn's subscription for the whole
    CHAT_COMPLETION_TIMEOUT_SECONDS (600 s; a burst of abandoned requests would have piled up)."""
    from services.api.main import create_app

    app = create_app(settings.model_copy(update={"sse_keepalive_seconds": 0.2}))
    app.state.enqueue = EnqueueRecorder(db)  # no worker: the turn is accepted and never ends
    body = json.dumps({"model": "scripted", "messages": [{"role": "user", "content": "then I leave"}]}).encode()
    with serve_api(app) as base:
        address = urlsplit(base)
        conn = socket.create_connection((address.hostname, address.port))
        conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\n"
                     b"Authorization: Bearer " + user.key.encode() + b"\r\nContent-Length: "
                     + str(len(body)).encode() + b"\r\n\r\n" + body)
        turn_id = wait_until(lambda: next(iter(app.state.hub.channels), None), what="the completion waiting")
        conn.close()
        wait_until(lambda: turn_id not in app.state.hub.channels, what="the api to stop waiting")
    assert turns.get_turn(db, user.id, turn_id).status == "queued"  # the turn itself is left to run


def test_a_retried_completion_with_the_same_idempotency_key_runs_its_turn_once(oai, model, db, user):
    """A chat completion could answer an error for a turn that was accepted and kept running, and
    a client retry then ran the turn a second time. Now Idempotency-Key makes the retry wait on (and
    answer with) the first request's turn."""
    model.on("exactly once", text("Only one run."))
    request = {"model": "scripted", "messages": [{"role": "user", "content": "exactly once, please"}]}
    headers = {"Idempotency-Key": "completion-retry-1"}
    first = oai.chat.completions.with_raw_response.create(**request, extra_headers=headers)
    again = oai.chat.completions.with_raw_response.create(**request, extra_headers=headers)
    assert again.headers["x-turn-id"] == first.headers["x-turn-id"]
    assert again.headers["x-session-id"] == first.headers["x-session-id"]
    assert again.parse().choices[0].message.content == first.parse().choices[0].message.content == "Only one run."
    assert len(requests_saying(model, "exactly once")) == 1
    assert len(sessions.list_messages(db, first.headers["x-session-id"])) == 2


def test_the_same_idempotency_key_with_another_body_is_409(oai, model):
    model.on("first body", text("ok"))
    headers = {"Idempotency-Key": "completion-retry-2"}
    oai.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "first body"}],
                                extra_headers=headers)
    with pytest.raises(openai.ConflictError) as raised:
        oai.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "second body"}],
                                    extra_headers=headers)
    assert raised.value.code == "idempotency_key_reused"


def _chat(oai, messages: list[dict], **kwargs):
    """One request as Open WebUI sends it: the whole history, no session header; (answer, session id)."""
    raw = oai.chat.completions.with_raw_response.create(model="scripted", messages=messages, **kwargs)
    return raw.parse().choices[0].message.content, raw.headers["x-session-id"]


def test_a_client_resending_its_whole_history_keeps_one_session(oai, chat_api, model, db, user):
    """Without X-Session-Id every request opened a new session holding a copy of the history, so
    reviews never fired and search saw each message once per request. Now the conversation keeps one session."""
    history = [{"role": "system", "content": "You are terse."}]
    seen = set()
    for n in range(1, 13):
        history.append({"role": "user", "content": f"exchange zebra{n}q please"})
        answer, session_id = _chat(oai, history)
        seen.add(session_id)
        history.append({"role": "assistant", "content": answer})
    assert len(seen) == 1
    session_id = seen.pop()
    stored = sessions.list_messages(db, session_id)
    assert len(stored) == 24
    assert [m.role for m in stored] == ["user", "assistant"] * 12
    due = [r for r, _ in reviews.list_reviews(db, user.id, session_id=session_id)
           if r.trigger in ("memory", "both")]
    assert [turns.get_turn(db, user.id, r.turn_id).seq for r in due] == [10]
    for n in (1, 7, 12):
        found = httpx.get(f"{chat_api}/v1/search", params={"q": f"zebra{n}q", "limit": 50},
                          headers=user.headers, timeout=30).json()["data"]
        assert len(found) == 2  # the question and the answer that echoes it, each once


def test_a_regenerated_answer_forks_the_conversation_and_leaves_the_old_session_intact(oai, model, db):
    first = [{"role": "user", "content": "fork check alpha"}]
    answer, original = _chat(oai, first)
    first.append({"role": "assistant", "content": answer})
    _, same = _chat(oai, first + [{"role": "user", "content": "fork check beta"}])
    assert same == original
    before = [(m.role, m.content) for m in sessions.list_messages(db, original)]
    edited = [{"role": "user", "content": "fork check alpha"}, {"role": "assistant", "content": "an edited answer"},
              {"role": "user", "content": "fork check gamma"}]
    _, forked = _chat(oai, edited)
    assert forked != original
    assert [(m.role, m.content) for m in sessions.list_messages(db, original)] == before
    assert [(m.role, m.content) for m in sessions.list_messages(db, forked)][:2] == [
        ("user", "fork check alpha"), ("assistant", "an edited answer")]
    assert sessions.get_session(db, None, forked).conversation_key == sessions.get_session(db, None, original).conversation_key


def test_the_same_first_message_from_another_user_or_prompt_is_another_conversation(oai, chat_api, model, db):
    other = make_user(db)
    _, mine = _chat(oai, [{"role": "user", "content": "hello there"}])
    _, prompted = _chat(oai, [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello there"}])
    with openai.OpenAI(base_url=f"{chat_api}/v1", api_key=other.key, max_retries=0, timeout=30) as theirs:
        _, their_session = _chat(theirs, [{"role": "user", "content": "hello there"}])
    keys = {sessions.get_session(db, None, s).conversation_key for s in (mine, prompted, their_session)}
    assert len(keys) == 3


def test_history_the_session_lacks_is_added_once_before_the_new_turn(oai, model, db):
    answer, session_id = _chat(oai, [{"role": "user", "content": "extra history one"}])
    history = [{"role": "user", "content": "extra history one"}, {"role": "assistant", "content": answer},
               {"role": "user", "content": "a message the client added"},
               {"role": "assistant", "content": "and an answer it added"},
               {"role": "user", "content": "extra history two"}]
    _, again = _chat(oai, history)
    assert again == session_id
    contents = [m.content for m in sessions.list_messages(db, session_id)]
    assert contents.count("extra history one") == 1
    assert contents.index("a message the client added") < contents.index("extra history two")
    assert contents.count("and an answer it added") == 1


def test_a_refused_turn_leaves_no_session_behind(oai, db, user, settings):
    """One request's writes are one transaction: a turn that cannot be accepted leaves no seeded session."""
    from shared.models.sessions import ChatSession
    from sqlmodel import func, select

    def count() -> int:
        with db.read() as s:
            return s.exec(select(func.count()).select_from(ChatSession).where(ChatSession.user_id == user.id)).one()

    before = count()
    big = "x" * (settings.max_input_bytes + 1)
    with pytest.raises(openai.APIStatusError) as caught:
        _chat(oai, [{"role": "user", "content": "seed"}, {"role": "assistant", "content": "ok"},
                    {"role": "user", "content": big}])
    assert caught.value.status_code == 413
    assert count() == before
