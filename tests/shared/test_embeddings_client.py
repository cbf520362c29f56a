"""The provider embeddings client (shared/llm/embeddings.py) against a scripted /v1/embeddings over real HTTP."""

from __future__ import annotations

import math

import pytest
from pydantic import SecretStr

from shared.errors import ModelAuthError, ModelRequestError, ModelUnavailable
from shared.llm.embeddings import MAX_INPUT_CHARS, Embedder
from tests.fakes.embeddings import vector

pytestmark = pytest.mark.once

KEY = "sk-embed-secret-123456"


@pytest.fixture
def embedder(embeddings_provider):
    embeddings_provider.requests.clear()
    embeddings_provider.failures.clear()
    embeddings_provider.garbage.clear()
    embeddings_provider.reverse = False
    return Embedder(embeddings_provider.base_url + "/embeddings", "fake-embed", KEY)


def unit(values):
    norm = math.sqrt(sum(x * x for x in values))
    return [x / norm for x in values]


def test_vectors_come_back_unit_length_in_input_order_even_when_the_provider_shuffles_rows(
        embedder, embeddings_provider):
    embeddings_provider.reverse = True
    texts = ["my puppy", "the weather", "a laptop"]
    got = embedder.embed(texts)
    assert [pytest.approx(v) for v in got] == [unit(vector(t)) for t in texts]
    [request] = embeddings_provider.requests
    assert request.body["model"] == "fake-embed" and request.body["input"] == texts
    assert request.headers["Authorization"] == f"Bearer {KEY}"


def test_dimensions_are_asked_for_when_configured_and_huge_inputs_are_cut(embeddings_provider):
    embedder = Embedder(embeddings_provider.base_url + "/embeddings", "fake-embed", None, dimensions=16)
    embeddings_provider.requests.clear()
    [got] = embedder.embed(["x" * (MAX_INPUT_CHARS * 3)])
    assert len(got) == 16
    [request] = embeddings_provider.requests
    assert request.body["dimensions"] == 16 and len(request.body["input"][0]) == MAX_INPUT_CHARS
    assert "Authorization" not in request.headers


def test_a_rate_limit_or_server_error_is_retried_and_a_bad_key_is_not(embedder, embeddings_provider):
    embeddings_provider.fail_next(429, headers={"Retry-After": "0"})
    embeddings_provider.fail_next(503, headers={"retry-after-ms": "10"})
    assert len(embedder.embed(["dog"])) == 1
    assert len(embeddings_provider.requests) == 3

    embeddings_provider.requests.clear()
    embeddings_provider.fail_next(401)
    with pytest.raises(ModelAuthError) as raised:
        embedder.embed(["dog"])
    assert len(embeddings_provider.requests) == 1 and KEY not in raised.value.message


def test_a_refused_request_and_exhausted_retries_are_model_errors(embedder, embeddings_provider):
    embeddings_provider.fail_next(400)
    with pytest.raises(ModelRequestError, match="400"):
        embedder.embed(["dog"])
    embeddings_provider.fail_next(500, times=2, headers={"Retry-After": "0"})
    with pytest.raises(ModelUnavailable):
        embedder.embed(["dog"], attempts=2)
    # longer than a backfill should wait: give up now
    embeddings_provider.fail_next(500, headers={"Retry-After": "3600"})
    with pytest.raises(ModelUnavailable):
        embedder.embed(["dog"])


@pytest.mark.parametrize("body", [
    {"data": [{"index": 0, "embedding": [1.0, 2.0]}]},  # one vector for two inputs
    {"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]},  # ragged
    {"data": [{"index": 0, "embedding": [0.0, 0.0]}, {"index": 1, "embedding": [1.0, 0.0]}]},  # zero vector
    {"data": [{"index": 0, "embedding": ["NaN", 1]}, {"index": 1, "embedding": [1.0, 0.0]}]},
    {"data": [{"index": 0, "embedding": "abc"}, {"index": 1, "embedding": [1.0]}]},
    {"data": [{"index": i, "embedding": [1.0] * 20_000} for i in range(2)]},  # absurdly wide
    {"data": "nope"}, {"error": "what"}, [1, 2, 3], "plain text",
])
def test_a_malformed_answer_is_an_error_not_a_wrong_vector(embedder, embeddings_provider, body):
    embeddings_provider.answer_next(body)
    with pytest.raises(ModelUnavailable):
        embedder.embed(["dog", "cat"])


def test_an_unreachable_provider_is_unavailable():
    from tests.support.env import free_port

    embedder = Embedder(f"http://127.0.0.1:{free_port()}/v1/embeddings", "m")
    with pytest.raises(ModelUnavailable):
        embedder.embed(["dog"], attempts=1, query=True)


def test_the_llm_key_goes_only_to_the_llm_host(settings):
    base = settings.model_copy(update={"embeddings_model": "m", "llm_base_url": "http://llm.test/v1",
                                       "llm_api_key": SecretStr("sk-llm-key"), "embeddings_api_key": None,
                                       "embeddings_base_url": None})
    same = Embedder.from_settings(base)
    assert (same.url, same.api_key) == ("http://llm.test/v1/embeddings", "sk-llm-key")
    other = Embedder.from_settings(base.model_copy(update={"embeddings_base_url": "http://other.test/v1/"}))
    assert (other.url, other.api_key) == ("http://other.test/v1/embeddings", None)
    own = Embedder.from_settings(base.model_copy(update={"embeddings_base_url": "http://other.test/v1",
                                                         "embeddings_api_key": SecretStr("sk-own")}))
    assert own.api_key == "sk-own"
    assert Embedder.from_settings(base.model_copy(update={"embeddings_model": "  "})) is None
