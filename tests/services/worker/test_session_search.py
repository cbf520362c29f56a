"""The session_search tool: discover, scroll, read and browse the user's stored conversations."""

from __future__ import annotations

import json
import re

import pytest

from shared.errors import InvalidInput, NotFound
from shared.stores import sessions
from services.worker.agent.drain import drain_session
from services.worker.registrations import register_tools
from services.worker.tools.registry import ToolContext
from services.worker.tools.session_search import session_search
from tests.fakes.model import text, tool_call
from tests.services.worker.helpers import post_turn, wait_finished
from tests.support.factories import make_session, make_user

REGISTRY = register_tools()  # this module's own registry of the built-in tools


def chat(db, user_id, title, lines):
    session = make_session(db, user_id, title=title)
    stored = sessions.append_messages(db, session.id, [
        {"role": "user" if i % 2 == 0 else "assistant", "content": line} for i, line in enumerate(lines)
    ])
    return session, stored


@pytest.fixture
def history(db, user):
    trip = chat(db, user.id, "Trip planning", [
        "Let's plan the trip to Lisbon.", "Sure, when do you leave?", "In May. I want to see the tram 28.",
        "Tram 28 is busy; go early in the morning.", "Great, and where should we eat?", "Try the bacalhau at Ramiro.",
    ])
    bugs = chat(db, user.id, "Flaky test", [
        "The payment test fails on Fridays.", "It depends on the weekday; freeze the clock.", "Frozen, thanks!",
    ])
    current = make_session(db, user.id, title="Now")
    sessions.append_messages(db, current.id, [{"role": "user", "content": "Remind me about the tram in Lisbon?"}])
    return trip, bugs, current


def ctx_for(settings, user_id, session_id):
    return ToolContext(user_id=user_id, session_id=session_id, turn_id="turn_x", settings=settings)


def test_discover_groups_stored_messages_by_session_with_context(settings, user, history):
    (trip, trip_msgs), (bugs, _), current = history
    found = session_search(ctx_for(settings, user.id, current.id), {"query": "When do we ride the tram in Lisbon?"})

    assert found["mode"] == "discover" and found["count"] == 1
    (result,) = found["results"]
    assert result["session_id"] == trip.id and result["title"] == "Trip planning"
    texts = [m["text"] for m in result["messages"]]
    match = next(m for m in result["messages"] if m["id"] == result["match_message_id"])
    assert match.get("match")  # every hit shown is marked; match_message_id is the best
    assert match["id"] == result["match_message_id"] and {"tram", "lisbon"} & set(re.findall(r"\w+", match["text"].lower()))
    assert set(texts) <= {m.content for m in trip_msgs}  # real stored text, never a summary
    assert result["messages_before"] + len(texts) + result["messages_after"] == len(trip_msgs)
    assert all({"id", "role", "at", "text"} <= set(m) for m in result["messages"])


def test_discover_leaves_out_the_current_session_unless_asked_for_it(settings, user, history):
    *_, current = history
    ctx = ctx_for(settings, user.id, current.id)
    assert current.id not in {r["session_id"] for r in session_search(ctx, {"query": "tram"})["results"]}
    inside = session_search(ctx, {"query": "tram", "session_id": current.id})
    assert [r["session_id"] for r in inside["results"]] == [current.id]


def test_discover_answers_plainly_when_nothing_matches(settings, user, history):
    found = session_search(ctx_for(settings, user.id, history[2].id), {"query": "zeppelin"})
    assert found == {"mode": "discover", "query": "zeppelin", "count": 0, "results": [],
                     "message": "No matching messages found."}


def test_scroll_shows_a_window_around_a_message_with_counts(settings, user, history):
    (trip, msgs), *_ = history
    found = session_search(ctx_for(settings, user.id, history[2].id),
                           {"session_id": trip.id, "around_message_id": msgs[3].id, "window": 1})
    assert found["mode"] == "scroll"
    assert [m["id"] for m in found["messages"]] == [msgs[2].id, msgs[3].id, msgs[4].id]
    assert [m.get("match", False) for m in found["messages"]] == [False, True, False]
    assert (found["messages_before"], found["messages_after"]) == (2, 1)


def test_read_shows_a_whole_short_session_and_the_ends_of_a_long_one(settings, db, user, history):
    ctx = ctx_for(settings, user.id, history[2].id)
    bugs, bug_msgs = history[1]
    short = session_search(ctx, {"session_id": bugs.id})
    assert [m["text"] for m in short["messages"]] == [m.content for m in bug_msgs] and "truncated" not in short

    long, msgs = chat(db, user.id, "Long", [f"line {i}" for i in range(45)])
    read = session_search(ctx, {"session_id": long.id})
    assert read["truncated"] and read["message_count"] == 45
    assert [m["text"] for m in read["messages"]] == [f"line {i}" for i in [*range(20), *range(35, 45)]]


def test_browse_lists_recent_sessions_with_their_first_lines(settings, user, history):
    (trip, _), (bugs, _), current = history
    found = session_search(ctx_for(settings, user.id, current.id), {})
    assert found["mode"] == "browse"
    assert [s["session_id"] for s in found["sessions"]] == [bugs.id, trip.id]
    assert found["sessions"][0]["preview"] == "The payment test fails on Fridays."
    assert found["sessions"][0]["message_count"] == 3 and found["sessions"][0]["title"] == "Flaky test"
    oldest = session_search(ctx_for(settings, user.id, current.id), {"sort": "oldest", "limit": 1})
    assert [s["session_id"] for s in oldest["sessions"]] == [trip.id]


def test_another_users_sessions_stay_invisible(settings, db, user, history):
    (trip, msgs), *_ = history
    stranger = make_user(db)
    ctx = ctx_for(settings, stranger.id, "ses_none")
    assert session_search(ctx, {"query": "tram Lisbon"})["count"] == 0
    assert session_search(ctx, {})["sessions"] == []
    with pytest.raises(NotFound):
        session_search(ctx, {"session_id": trip.id})
    with pytest.raises(NotFound):
        session_search(ctx, {"session_id": trip.id, "around_message_id": msgs[0].id})


def test_bad_arguments_are_refused_with_a_reason(settings, user, history):
    ctx = ctx_for(settings, user.id, history[2].id)
    with pytest.raises(InvalidInput, match="sort"):
        session_search(ctx, {"query": "tram", "sort": "random"})
    with pytest.raises(InvalidInput, match="role_filter"):
        session_search(ctx, {"query": "tram", "role_filter": "system"})


def test_the_model_gets_stored_messages_and_no_extra_model_call(db, user, model, make_runtime, history):
    current = history[2]
    model.script(tool_call([("session_search", {"query": "where should we eat"})]),
                 text("You planned to try the bacalhau at Ramiro."))
    turn = post_turn(db, user.id, current.id, "Where did we say we'd eat?")
    drain_session(make_runtime(), current.id)

    assert wait_finished(db, turn.id).output == "You planned to try the bacalhau at Ramiro."
    assert len(model.requests) == 2
    (result,) = [json.loads(m.content) for m in sessions.turn_messages(db, turn.id) if m.role == "tool"]
    assert "Try the bacalhau at Ramiro." in [m["text"] for m in result["results"][0]["messages"]]
    assert "session_search" in model.requests[0].body["messages"][0]["content"]
    assert REGISTRY.get("session_search").read_only
