"""Rate limits: every route per key (or per address), turn creation on its own stricter bucket."""

from __future__ import annotations

import uuid

import httpx
import pytest

from services.api.main import create_app
from tests.services.api.helpers import error_of, openai_error_of
from tests.support.env import free_port
from tests.support.factories import make_session, make_user
from tests.support.live import serve_api

LIMIT = 6
TURN_LIMIT = 2


@pytest.fixture(scope="module")
def limited_api(settings):
    """An api whose limits are low; its own key prefix keeps its buckets apart from every other test's."""
    custom = settings.model_copy(update={"rate_limit_per_minute": LIMIT, "turn_rate_limit_per_minute": TURN_LIMIT,
                                         "broker_key_prefix": f"rl-{uuid.uuid4().hex[:8]}:"})
    app = create_app(custom)
    app.state.enqueue = lambda name, payload: None
    with serve_api(app) as base_url, httpx.Client(base_url=base_url, timeout=20) as http:
        yield http


def assert_rate_limited(response: httpx.Response) -> None:
    assert response.status_code == 429
    assert int(response.headers["retry-after"]) >= 1


def test_a_key_past_its_limit_gets_429_with_retry_after_and_other_keys_do_not(limited_api, db):
    """Reproduction: one key could send requests without any limit (no 429 ever), starving the others."""
    noisy, quiet = make_user(db), make_user(db)
    answers = [limited_api.get("/v1/sessions", headers=noisy.headers) for _ in range(LIMIT + 1)]

    assert [r.status_code for r in answers[:LIMIT]] == [200] * LIMIT
    assert_rate_limited(answers[LIMIT])
    assert error_of(answers[LIMIT])["code"] == "rate_limited"
    openai = limited_api.get("/v1/models", headers=noisy.headers)
    assert_rate_limited(openai)
    assert openai_error_of(openai)["code"] == "rate_limited" and openai_error_of(openai)["type"] == "rate_limit_error"

    assert limited_api.get("/v1/sessions", headers=quiet.headers).status_code == 200
    assert limited_api.get("/healthz").status_code == 200  # probes are exempt


def test_turn_creation_has_its_own_stricter_limit(limited_api, db):
    """Reproduction: one key could create turns as fast as it could post them."""
    user = make_user(db)
    session = make_session(db, user.id)
    path = f"/v1/sessions/{session.id}/turns"
    posted = [limited_api.post(path, headers=user.headers, json={"input": f"hi {n}"}) for n in range(TURN_LIMIT + 1)]

    assert [r.status_code for r in posted[:TURN_LIMIT]] == [202] * TURN_LIMIT
    assert_rate_limited(posted[TURN_LIMIT])
    assert error_of(posted[TURN_LIMIT])["code"] == "rate_limited"
    completion = limited_api.post("/v1/chat/completions", headers=user.headers,
                                  json={"model": "hermes", "messages": [{"role": "user", "content": "hi"}]})
    assert_rate_limited(completion)
    assert openai_error_of(completion)["code"] == "rate_limited"
    assert limited_api.get(f"/v1/sessions/{session.id}", headers=user.headers).status_code == 200


def test_every_turn_posted_counts_against_the_general_limit_even_one_its_turn_limit_refused(limited_api, db):
    """Both buckets of a new turn are taken in one script: the general one first, so a turn refused by the turn
    limit has still used a request, and the key's other requests run out exactly when they did with two hits."""
    user = make_user(db)
    path = f"/v1/sessions/{make_session(db, user.id).id}/turns"
    posted = [limited_api.post(path, headers=user.headers, json={"input": f"hi {n}"}) for n in range(TURN_LIMIT + 1)]
    assert_rate_limited(posted[TURN_LIMIT])

    left = LIMIT - len(posted)
    reads = [limited_api.get("/v1/sessions", headers=user.headers) for _ in range(left + 1)]
    assert [r.status_code for r in reads[:left]] == [200] * left
    assert_rate_limited(reads[left])


def test_requests_without_a_key_are_limited_by_address(limited_api):
    answers = [limited_api.get("/v1/sessions") for _ in range(LIMIT + 1)]
    assert [r.status_code for r in answers[:LIMIT]] == [401] * LIMIT
    assert_rate_limited(answers[LIMIT])


def test_the_api_lets_requests_through_when_the_limiter_cannot_reach_redis(settings, db):
    """A limiter must never take the api down: with Redis unreachable, requests are served (fail open)."""
    user = make_user(db)
    custom = settings.model_copy(update={"rate_limit_per_minute": 1, "redis_url": f"redis://127.0.0.1:{free_port()}/0"})
    with serve_api(create_app(custom)) as base_url, httpx.Client(base_url=base_url, timeout=20) as http:
        answers = [http.get("/v1/sessions", headers=user.headers).status_code for _ in range(3)]
    assert answers == [200, 200, 200]


def test_console_turns_count_against_the_signed_in_key_not_the_address(settings, db):
    """The console sends turns with a session cookie, not a bearer key: they share the key's turn bucket."""
    from tests.services.api.console.conftest import Browser, csrf_of

    custom = settings.model_copy(update={"rate_limit_per_minute": 100, "turn_rate_limit_per_minute": TURN_LIMIT,
                                         "broker_key_prefix": f"rl-{uuid.uuid4().hex[:8]}:"})
    app = create_app(custom)
    app.state.enqueue = lambda name, payload: None
    user = make_user(db)
    session = make_session(db, user.id)
    with serve_api(app) as base_url, httpx.Client(base_url=base_url, timeout=20) as http:
        api_turn = http.post(f"/v1/sessions/{session.id}/turns", headers=user.headers, json={"input": "from the api"})
        assert api_turn.status_code == 202
        browser = Browser(http)
        browser.sign_in(user.key)
        token = csrf_of(browser.get("/chat").text)
        sent = http.post(f"/chat/{session.id}/send", data={"csrf_token": token, "message": "from the page"})
        assert sent.status_code == 303
        refused = http.post(f"/chat/{session.id}/send", data={"csrf_token": token, "message": "one too many"})
        assert_rate_limited(refused)
        assert refused.headers["content-type"].startswith("text/html") and 'role="alert"' in refused.text
        http.cookies.clear()
        assert http.get("/signin").status_code == 200  # the address has its own bucket
