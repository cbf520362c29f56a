"""Session titles: the model names an untitled session after its first exchange; a user's title stays."""

from __future__ import annotations

from shared.stores import sessions
from services.worker.agent.drain import drain_session
from services.worker.features.titles import MAX_TITLE_CHARS, clean
from tests.fakes.model import text
from tests.services.worker.helpers import post_turn, wait_finished
from tests.support.factories import make_session


def test_the_first_exchange_names_an_untitled_session_once(db, user, model, make_runtime):
    session = make_session(db, user.id)
    model.script(text("Go early in the morning."), text('"Title: Riding tram 28 in Lisbon."'), text("Yes."))
    runtime = make_runtime(session_titles=True)
    first = post_turn(db, user.id, session.id, "When should I ride tram 28 in Lisbon?")
    drain_session(runtime, session.id)
    assert wait_finished(db, first.id).output == "Go early in the morning."
    assert sessions.get_session(db, user.id, session.id).title == "Riding tram 28 in Lisbon"
    assert "tram 28" in model.requests[1].body["messages"][0]["content"]

    second = post_turn(db, user.id, session.id, "Thanks!")
    drain_session(runtime, session.id)
    assert wait_finished(db, second.id).output == "Yes."
    assert len(model.requests) == 3  # no second title call


def test_a_title_the_user_set_is_never_replaced(db, user, model, make_runtime):
    session = make_session(db, user.id)
    sessions.set_title(db, user.id, session.id, "Mine")  # what PATCH /v1/sessions/{id} does
    model.script(text("Hello."))
    turn = post_turn(db, user.id, session.id, "Hi")
    drain_session(make_runtime(session_titles=True), session.id)
    wait_finished(db, turn.id)
    assert sessions.get_session(db, user.id, session.id).title == "Mine" and len(model.requests) == 1
    assert sessions.set_title_if_unset(db, session.id, "Auto") is False


def test_titles_are_one_short_line():
    assert clean("Title: **A very long title** that goes on and on about many things in the world today\nmore")
    assert len(clean("word " * 40)) <= MAX_TITLE_CHARS
    assert clean("  \n'Quoted.'\n") == "Quoted"
