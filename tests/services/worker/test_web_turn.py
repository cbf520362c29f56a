"""A turn that looks things up: web_search over a local fake SearXNG, web_extract of a local page, an answer.

Nothing leaves the machine: SearXNG and the pages are one server the test starts on 127.0.0.1, which
WEB_FETCH_ALLOW lets through.
"""

from __future__ import annotations

import json

import pytest

from services.worker.agent.drain import drain_session
from tests.fakes.model import text, tool_call
from tests.support.web_pages import Pages
from tests.services.worker.helpers import post_turn, wait_finished

FIRST_CALL_LIMIT = 15 * 1024


@pytest.fixture(scope="module")
def pages():
    with Pages() as served:
        yield served


def offered(request) -> list[str]:
    return [t["function"]["name"] for t in request.body.get("tools") or []]


def tool_results(request) -> list[str]:
    return [m["content"] for m in request.body["messages"] if m.get("role") == "tool"]


def test_a_question_is_answered_from_a_searched_and_extracted_page(db, user, session, model, make_runtime, pages):
    runtime = make_runtime(searxng_url=pages.url(""), web_fetch_allow="127.0.0.1")
    model.script(tool_call([("web_search", {"query": "frobnicator 4.2 release notes", "limit": 2})]),
                 tool_call([("web_extract", {"urls": [pages.url("/article")]})]),
                 text("4.2 ships the quantum widget, which halves start-up time."))
    turn = post_turn(db, user.id, session.id, "What is new in frobnicator 4.2?")

    drain_session(runtime, session.id)

    assert wait_finished(db, turn.id).output == "4.2 ships the quantum widget, which halves start-up time."
    calls = model.requests[-3:]
    assert {"web_search", "web_extract"} <= set(offered(calls[0]))
    found = json.loads(tool_results(calls[1])[-1])
    assert [r["url"] for r in found["results"]] == [pages.url("/article"), pages.url("/injection")]
    read = json.loads(tool_results(calls[2])[-1])["results"][0]
    assert "quantum widget halves start-up time" in read["content"]
    assert read["content"].startswith("<untrusted-web-content>")


def test_web_search_is_not_offered_without_a_backend(db, user, session, model, make_runtime):
    """Reproduction: no SEARXNG_URL and no Brave key; the model must not see a tool that can only fail."""
    runtime = make_runtime(searxng_url=None, brave_search_api_key=None)
    model.script(text("ok"))
    turn = post_turn(db, user.id, session.id, "hi")

    drain_session(runtime, session.id)

    wait_finished(db, turn.id)
    names = offered(model.requests[-1])
    assert "web_search" not in names and "web_extract" in names


def test_the_first_call_of_a_session_with_the_web_tools_stays_within_15_kb(db, user, session, model, make_runtime,
                                                                            pages):
    runtime = make_runtime(searxng_url=pages.url(""))
    model.script(text("Hello."))
    turn = post_turn(db, user.id, session.id, "Hello!")

    drain_session(runtime, session.id)

    wait_finished(db, turn.id)
    first = model.requests[-1]
    size = int(first.headers.get("content-length") or 0)
    tools = len(json.dumps(first.body.get("tools") or []))
    print(f"\nfirst call of a session: {size:,} bytes ({size / 1024:.1f} KB; tools {tools / 1024:.1f} KB, "
          f"{len(offered(first))} tools)")
    assert {"web_search", "web_extract"} <= set(offered(first))
    assert size <= FIRST_CALL_LIMIT
