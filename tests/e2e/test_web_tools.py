"""The web tools through the real api and worker: a fake SearXNG and local pages the test serves on loopback
(nothing leaves the machine). The pages are on 127.0.0.2 and WEB_FETCH_ALLOW names only that address, so
127.0.0.1 (where a decoy page listens) stands for every loopback address the operator did not list."""

from __future__ import annotations

import json

import pytest

from tests.fakes.model import text, tool_call
from tests.support.processes import Stack
from tests.support.web_pages import Pages

pytestmark = [pytest.mark.e2e, pytest.mark.once]  # process behaviour: see tests/conftest.py


@pytest.fixture(scope="module")
def pages():
    with Pages("127.0.0.2") as served, Pages("127.0.0.1") as decoy:
        served.decoy = decoy
        yield served


@pytest.fixture(scope="module")
def stack(fake_model, pages):
    s = Stack(model_url=fake_model.base_url, env_overrides={
        "SEARXNG_URL": pages.url(""), "WEB_FETCH_ALLOW": "127.0.0.2/32", "WEB_FETCH_MAX_BYTES": "1000000"})
    with s:
        s.start_api()
        s.start_worker()
        yield s


def ask(stack: Stack, question: str) -> tuple[dict, list[dict]]:
    """Post one turn, wait for its end; the turn and its stored messages."""
    key = stack.create_user(f"web-{abs(hash(question)) % 10**6}")
    with stack.client(key) as c:
        session = c.post("/v1/sessions", json={}).json()
        turn = c.post(f"/v1/sessions/{session['id']}/turns", json={"input": question}).json()
        with c.stream("GET", f"/v1/turns/{turn['id']}/events", timeout=60) as response:
            for _ in response.iter_lines():
                pass
        done = c.get(f"/v1/turns/{turn['id']}").json()
        return done, c.get(f"/v1/sessions/{session['id']}/messages").json()["data"]


def test_a_question_is_answered_from_a_searched_and_extracted_page(stack, model, pages):
    model.on("frobnicator 4.2", tool_call([("web_search", {"query": "frobnicator 4.2 release notes"})]),
             tool_call([("web_extract", {"urls": [pages.url("/article")]})]),
             text("4.2 ships the quantum widget."))

    done, messages = ask(stack, "What is new in frobnicator 4.2?")

    assert (done["status"], done["output"]) == ("completed", "4.2 ships the quantum widget.")
    found, read = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
    assert found["results"][0]["url"] == pages.url("/article")
    assert "quantum widget halves start-up time" in read["results"][0]["content"]


def test_inside_the_house_is_refused_a_big_page_is_cut_and_an_injection_is_flagged(stack, model, pages):
    urls = [pages.url("/to?url=" + pages.decoy.url("/article")),  # a redirect to 127.0.0.1
            pages.url("/to?url=http://10.20.30.40/admin"),          # a redirect to a private address
            pages.decoy.url("/article", host="localhost"),           # a name resolving to loopback
            pages.url("/big"), pages.url("/injection")]
    model.on("read these", tool_call([("web_extract", {"urls": urls})]), text("Read what I could."))

    done, messages = ask(stack, "read these pages")

    assert done["status"] == "completed"
    [result] = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
    back, private, named, big, injected = result["results"]
    assert [r["error"]["code"] for r in (back, private, named)] == ["address_refused"] * 3
    assert "127.0.0.1" in back["error"]["message"] and "private" in private["error"]["message"]
    assert "localhost resolves to 127.0.0.1" in named["error"]["message"]
    assert pages.decoy.headers_seen == []  # the loopback page outside the allow list was never reached
    assert big["truncated"] is True and len(big["content"]) < 25_000
    assert injected["flagged"]["pattern"] == "prompt_injection"
    assert injected["content"].startswith("<untrusted-web-content>")
