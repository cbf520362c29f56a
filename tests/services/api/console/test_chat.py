"""The chat pages: sessions newest first, transcripts escaped, sending, the live stream, approvals, ownership."""

from __future__ import annotations

import json

from shared.messaging import events
from shared.models.turns import TurnStatus
from shared.queue.names import RUN_TURN
from shared.stores import sessions, turns
from tests.services.api.console.conftest import csrf_of
from tests.support.factories import make_session, make_user

SCRIPT = '<script>document.title="pwned"</script>'


def test_sessions_are_listed_newest_first_with_titles(signed_in, db, user):
    make_session(db, user.id, title="older chat")
    make_session(db, user.id, title="newer chat")
    page = signed_in.get("/chat").text
    assert page.index("newer chat") < page.index("older chat")


def test_a_transcript_escapes_what_was_written_and_shows_tool_calls(signed_in, db, user):
    chat = make_session(db, user.id, title=SCRIPT)
    sessions.append_messages(db, chat.id, [
        {"role": "user", "content": f"hello {SCRIPT}"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": '{"command": "ls <b>"}'}}]},
        {"role": "tool", "content": "a.txt", "tool_call_id": "c1", "name": "shell"},
        {"role": "assistant", "content": "done"},
    ])
    page = signed_in.get(f"/chat/{chat.id}").text
    assert "<script>document.title" not in page
    assert "hello &lt;script&gt;document.title=&#34;pwned&#34;&lt;/script&gt;" in page
    assert "shell({&#34;command&#34;: &#34;ls &lt;b&gt;&#34;})" in page and "a.txt" in page
    assert 'id="m-' in page


def test_another_users_session_is_not_found(signed_in, db):
    other = make_user(db)
    chat = make_session(db, other.id, title="private")
    response = signed_in.get(f"/chat/{chat.id}")
    assert response.status_code == 404 and "private" not in response.text
    token = csrf_of(signed_in.get("/chat").text)
    assert signed_in.http.post(f"/chat/{chat.id}/send", data={"csrf_token": token, "message": "hi"}).status_code == 404


def test_sending_a_message_queues_a_turn_and_opens_the_live_answer(signed_in, db, user, enqueued):
    response = signed_in.post_form("/chat", "/chat/new", {"message": "plan my week"})
    assert response.status_code == 303
    session_id = response.headers["location"].split("/chat/")[1].split("#")[0]
    assert [name for name, _, _ in enqueued.calls] == [RUN_TURN]
    page = signed_in.get(f"/chat/{session_id}").text
    assert "plan my week" in page and 'data-turn="' in page and "/static/console/chat.js" in page
    assert '<meta http-equiv="refresh"' in page  # inside <noscript>: the no-JS fallback


def test_an_empty_message_is_refused_plainly(signed_in, db, user):
    chat = make_session(db, user.id)
    response = signed_in.post_form(f"/chat/{chat.id}", f"/chat/{chat.id}/send", {"message": "  "})
    assert response.status_code == 303
    assert 'role="alert"' in signed_in.get(response.headers["location"]).text


def test_a_message_with_a_nul_is_refused_422(signed_in, db, user):
    chat = make_session(db, user.id)
    response = signed_in.post_form(f"/chat/{chat.id}", f"/chat/{chat.id}/send", {"message": "a\x00b"})
    assert response.status_code == 422 and 'role="alert"' in response.text


def test_the_console_streams_the_turns_events_for_its_owner_only(signed_in, db, user, redis_client, browser):
    chat = make_session(db, user.id)
    turn, _ = turns.create_turn(db, user.id, chat.id, "tell me")
    events.publish(redis_client, turn.id, "message.delta", {"delta": SCRIPT})
    events.publish(redis_client, turn.id, "turn.completed", {"output": SCRIPT, "usage": {}}, ttl_seconds=60)
    with signed_in.http.stream("GET", f"/chat/turns/{turn.id}/events") as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        body = "".join(response.iter_text())
    frames = [line for line in body.splitlines() if line.startswith("data: ")]
    assert json.loads(frames[0][6:]) == {"delta": SCRIPT}
    other = make_user(db)
    browser.sign_in(other.key)
    assert browser.get(f"/chat/turns/{turn.id}/events").status_code == 404


def test_a_finished_turns_answer_is_in_the_transcript(signed_in, db, user):
    chat = make_session(db, user.id)
    turn, _ = turns.create_turn(db, user.id, chat.id, "question?")
    sessions.append_messages(db, chat.id, [{"role": "user", "content": "question?"},
                                           {"role": "assistant", "content": "the answer"}])
    with db.write() as s:
        row = s.get(type(turn), turn.id)
        row.status = TurnStatus.completed.value
        s.add(row)
    page = signed_in.get(f"/chat/{chat.id}").text
    assert "the answer" in page and "data-turn" not in page


def test_deciding_another_users_approval_is_not_found(signed_in):
    token = csrf_of(signed_in.get("/chat").text)
    response = signed_in.http.post("/chat/approvals/apr_nope", data={"csrf_token": token, "decision": "approve"})
    assert response.status_code == 404


def test_the_agents_question_shows_a_button_per_choice_and_a_press_answers_it(signed_in, db, user, enqueued):
    from shared.stores import clarifications
    from shared.stores.clarifications import Question

    chat = make_session(db, user.id)
    turn, _ = turns.create_turn(db, user.id, chat.id, "theme my site")
    turns.claim_next(db, chat.id, "worker@test:console", 30)
    question = Question(user.id, chat.id, turn.id, "c1", "Which theme?", ("Light", f"Dark {SCRIPT}"))
    asked = clarifications.park(db, question, "worker@test:console", 600)

    page = signed_in.get(f"/chat/{chat.id}").text

    assert "waits for your answer" in page and "Which theme?" in page
    assert 'value="Light"' in page and "<script>document.title" not in page
    stranger = signed_in.http.post("/chat/clarifications/clr_nope",
                                   data={"csrf_token": csrf_of(page), "choice": "Light"})
    assert stranger.status_code == 404
    pressed = signed_in.post_form(f"/chat/{chat.id}", f"/chat/clarifications/{asked.id}",
                                  {"choice": "Light", "session_id": chat.id})
    assert pressed.status_code == 303
    assert clarifications.list_pending(db, user.id) == []
    assert [name for name, _, _ in enqueued.calls] == ["resume_turn"]


def test_the_agents_plan_is_shown_with_each_items_status(signed_in, db, user):
    from shared.stores import todos

    chat = make_session(db, user.id)
    todos.replace(db, chat.id, [{"id": "1", "content": "Find trains", "status": "completed"},
                                {"id": "2", "content": f"Book {SCRIPT}", "status": "in_progress"}])

    page = signed_in.get(f"/chat/{chat.id}").text

    assert "The agent's plan" in page and "☑ Find trains" in page and "▶ Book &lt;script&gt;" in page


def test_the_pages_script_sends_with_accept_event_stream_and_reads_the_answer_in_the_same_response(
        signed_in, db, user, redis_client, enqueued):
    """The console's streaming POST: the turn is queued as by the form, and the response streams its events."""
    chat = make_session(db, user.id)
    token = csrf_of(signed_in.get(f"/chat/{chat.id}").text)
    with signed_in.http.stream("POST", f"/chat/{chat.id}/send", data={"csrf_token": token, "message": "hi"},
                               headers={"Accept": "text/event-stream"}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        turn_id = response.headers["x-turn-id"]
        assert [name for name, _, _ in enqueued.calls] == [RUN_TURN]
        events.publish(redis_client, turn_id, "message.delta", {"delta": SCRIPT})
        events.publish(redis_client, turn_id, "turn.completed", {"output": SCRIPT, "usage": {}}, ttl_seconds=60)
        body = "".join(response.iter_text())
    assert turns.get_turn(db, user.id, turn_id).input == "hi"
    frames = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]
    assert frames == [{"delta": SCRIPT}, {"output": SCRIPT, "usage": {}}]


def test_a_streaming_send_that_is_refused_answers_json_and_queues_nothing(signed_in, db, user, enqueued):
    chat = make_session(db, user.id)
    token = csrf_of(signed_in.get(f"/chat/{chat.id}").text)
    stream = {"Accept": "text/event-stream"}
    blank = signed_in.http.post(f"/chat/{chat.id}/send", data={"csrf_token": token, "message": "  "}, headers=stream)
    huge = signed_in.http.post(f"/chat/{chat.id}/send", data={"csrf_token": token, "message": "x" * 300_000},
                               headers=stream)
    forged = signed_in.http.post(f"/chat/{chat.id}/send", data={"csrf_token": "nope", "message": "hi"}, headers=stream)
    other = make_session(db, make_user(db).id)
    foreign = signed_in.http.post(f"/chat/{other.id}/send", data={"csrf_token": token, "message": "hi"}, headers=stream)
    assert blank.status_code == 422 and blank.json()["error"]["code"] == "empty_message"
    assert huge.status_code == 413
    assert forged.status_code == 403 and foreign.status_code == 404
    assert enqueued.calls == []
