"""web_search over each backend the settings choose, its results flagged when a snippet tries to instruct."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from shared.errors import Unavailable
from services.worker.tools.registry import ToolContext
from services.worker.tools.web import web_search
from tests.support.env import free_port
from tests.support.web_pages import Pages

pytestmark = pytest.mark.once


@pytest.fixture(scope="module")
def pages():
    with Pages() as served:
        yield served


def search(settings, **update) -> dict:
    ctx = ToolContext(user_id="u", session_id="s", turn_id="t", settings=settings.model_copy(update=update))
    return web_search(ctx, {"query": "frobnicator   4.2", "limit": 1})


def test_searxng_answers_titles_urls_and_snippets(settings, pages):
    found = search(settings, searxng_url=pages.url(""))

    assert found["query"] == "frobnicator 4.2"
    assert found["results"] == [{"title": "Release 4.2 notes", "url": pages.url("/article"),
                                 "snippet": "What is new in 4.2."}]


def test_brave_is_used_with_its_key_when_no_searxng_is_set(settings, pages):
    found = search(settings, searxng_url=None, brave_search_api_key=SecretStr("brave-key"),
                   brave_search_url=pages.url("/brave"))

    assert [r["url"] for r in found["results"]] == [pages.url("/article")]
    assert pages.headers_seen[-1]["x-subscription-token"] == "brave-key"


def test_a_snippet_that_tries_to_instruct_the_agent_is_flagged(settings, pages):
    ctx = ToolContext(user_id="u", session_id="s", turn_id="t",
                      settings=settings.model_copy(update={"searxng_url": pages.url("")}))

    found = web_search(ctx, {"query": "banana bread", "limit": 2})

    assert "prompt_injection" in found["warning"]


def test_a_backend_that_does_not_answer_is_a_readable_error(settings):
    with pytest.raises(Unavailable) as err:
        search(settings, searxng_url=f"http://127.0.0.1:{free_port()}")
    assert err.value.code == "search_unavailable"
