"""`hstack chat`: lines in, streamed answers and tool activity out, through the api and a real worker."""

from __future__ import annotations

import io

import httpx
import pytest

from shared.messaging import events
from tests.fakes.model import fail, text, tool_call
from tests.support.factories import make_session, make_user
from tests.support.worker import inprocess_worker


@pytest.fixture(scope="module")
def worker():
    with inprocess_worker(queues=("turns",)):
        yield


@pytest.fixture
def chat(hstack, worker, db, monkeypatch):
    """`hstack chat --key <a new user's key>` reading `lines` as its standard input."""
    user = make_user(db)

    def run(*lines: str) -> tuple[int, str, str]:
        monkeypatch.setattr("sys.stdin", io.StringIO("".join(line + "\n" for line in lines)))
        return hstack("chat", "--key", user.key)

    run.user = user
    return run


def test_two_lines_are_two_turns_with_streamed_answers(chat, model):
    model.on("first line", text("Hello from the first turn.", chunk_delay=0.01))
    model.on("second line", text("And the second one.", chunk_delay=0.01))

    code, out, _ = chat("first line", "second line")

    assert code == 0
    assert out.splitlines() == ["Hello from the first turn.", "And the second one."]


def test_a_reviews_notice_is_one_line_before_the_next_answer(chat, model, hstack, db, redis_client, monkeypatch):
    """What a background review saved reaches the user as Hermes Agent's one-line notice."""
    session = make_session(db, chat.user.id)
    events.hold_notice(redis_client, session.id, "review.completed", {
        "review_id": "rev_1", "session_id": session.id, "turn_id": "turn_1",
        "summary": "Self-improvement review: saved to user profile", "writes": []})
    model.on("next question", text("The answer.", chunk_delay=0.01))
    monkeypatch.setattr("sys.stdin", io.StringIO("next question\n"))

    code, out, _ = hstack("chat", "--key", chat.user.key, "--session", session.id)

    assert code == 0
    assert out.splitlines() == ["  💾 Self-improvement review: saved to user profile", "The answer."]


def test_tool_activity_is_shown_as_it_happens(chat, model):
    model.on("show my files", tool_call([("list_files", {"path": "."})]), text("Nothing much here."))

    code, out, _ = chat("show my files")

    assert code == 0
    assert out.splitlines() == ['  ↳ list_files(path=".") … ok', "Nothing much here."]


def test_a_failed_turn_is_reported_and_the_chat_goes_on(chat, model):
    model.on("break please", fail(status=400, message="this request is refused"))
    model.on("still there?", text("Yes."))

    code, out, _ = chat("break please", "still there?")

    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("error: ") and "(model_bad_request)" in lines[0]
    assert lines[1:] == ["Yes."]


def test_new_starts_another_session_and_quit_ends_the_chat(chat, model, api_url):
    code, _, _ = chat("in the first session", "/new", "in the second session", "/quit", "never sent")

    assert code == 0
    headers = {"Authorization": f"Bearer {chat.user.key}"}
    sessions = httpx.get(f"{api_url}/v1/sessions", headers=headers).json()["data"]
    assert [s["turn_count"] for s in sessions] == [1, 1]
    assert not any("never sent" in str(r.body) for r in model.requests)


def test_a_refused_line_is_reported_and_the_next_one_still_runs(chat, model):
    code, out, _ = chat("x" * 300_000, "after the big one")

    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("error: ") and "HTTP 413" in lines[0]
    assert lines[1:] == ["You said: after the big one"]


@pytest.fixture
def gated(model):
    """The in-process worker's tools gain the gated test tool for one test; the guardian is unsure."""
    from services.worker.runtime import get_runtime
    from tests.services.worker.gated import GUARDIAN_MARKER, gated_tool

    ran: list[str] = []
    tools = get_runtime().tools
    tools.register(gated_tool(ran))
    model.on(GUARDIAN_MARKER, *[text("uncertain")] * 5)
    yield ran
    tools._tools.pop("shell")


@pytest.mark.parametrize("key, verdict, runs", [("y", "approved once", True), ("s", "approved for this session", True),
                                                ("n", "denied", False)])
def test_an_approval_request_is_shown_inline_and_answered_with_a_key(chat, model, gated, key, verdict, runs):
    model.on("clean the build", tool_call([("shell", {"command": "rm -r build-tmp"})]), text("Done here."))

    code, out, _ = chat("clean the build", "maybe", key)

    assert code == 0
    lines = out.splitlines()
    assert "  ⚠ approval needed: rm -r build-tmp" in lines[1]
    assert lines[3:6] == ["  approve? [y] once  [s] for this session  [n] deny › maybe",
                          f"  approve? [y] once  [s] for this session  [n] deny › {key}", f"    {verdict}"]
    assert lines[-1] == "Done here."
    assert gated == (["rm -r build-tmp"] if runs else [])


def test_a_question_is_a_numbered_list_answered_with_a_number(chat, model):
    """The agent's clarify question in `hstack chat`: its choices numbered, the number sends that choice."""
    asking = {"question": "Which theme?", "choices": ["Light", "Dark"]}
    model.on("theme it", tool_call([("clarify", asking)]), text("Dark it is."))

    code, out, _ = chat("theme it", "7", "2")

    assert code == 0
    lines = out.splitlines()
    assert lines[1:4] == ["  ? Which theme?", "    1. Light", "    2. Dark"]
    assert lines[4:7] == ["  choose [1-2] › 7", "  choose [1-2] › 2", "    answered: Dark"]
    assert lines[-1] == "Dark it is."
    assert '{"answer": "Dark"}' in str(model.requests[-1].body)
