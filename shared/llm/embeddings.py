"""Embeddings from the provider's OpenAI-compatible `POST {base}/embeddings` (Ollama, vLLM, OpenAI speak it).

Hybrid search's provider source (EMBEDDINGS_MODEL): `Embedder.from_settings(settings).embed(texts)` answers
one unit-length vector per text, in order. A batch that fails with a retryable status (429, 5xx, a dropped
connection) is tried again a few times, honouring Retry-After up to a cap; the query path asks for one
attempt only, because a search must answer in time and falls back to keywords instead. Errors come out as
the ModelError tree with the provider's own words, never the key.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import httpx

from shared.backoff import exponential
from shared.config import Settings
from shared.errors import ModelAuthError, ModelError, ModelRequestError, ModelUnavailable
from shared.llm.client import shared_http_client
from shared.llm.openai_compat import error_message, retry_after_of

MAX_DIMENSIONS = 16_384  # wider than any embedding model; a longer "vector" is a broken answer, not one to store
MAX_INPUT_CHARS = 8_000  # about 2,000 tokens: under every common embedding model's window; the rest is cut
RETRY_AFTER_CAP = 10.0  # seconds: a backfill waits out a short rate limit, not a long one
BATCH_TIMEOUT = httpx.Timeout(60.0, connect=10.0)
QUERY_TIMEOUT = httpx.Timeout(5.0, connect=2.0)


@dataclass(frozen=True)
class Embedder:
    """One provider endpoint and model; stateless, safe to share between threads."""

    url: str
    model: str
    api_key: str | None = None
    dimensions: int | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> "Embedder | None":
        """The configured embedder, or None when EMBEDDINGS_MODEL is unset. EMBEDDINGS_BASE_URL defaults to
        LLM_BASE_URL, and only then does the key default to LLM_API_KEY: a key never goes to another host."""
        model = (settings.embeddings_model or "").strip()
        if not model:
            return None
        own_url = (settings.embeddings_base_url or "").strip()
        base = own_url or (settings.llm_base_url or "").strip()
        if not base:
            raise ModelRequestError("EMBEDDINGS_MODEL is set but neither EMBEDDINGS_BASE_URL nor LLM_BASE_URL is")
        secret = settings.embeddings_api_key or (None if own_url else settings.llm_api_key)
        key = secret.get_secret_value() if secret is not None else None
        return cls(base.rstrip("/") + "/embeddings", model, key or None, settings.embeddings_dimensions)

    def embed(self, texts: list[str], *, attempts: int = 4, query: bool = False) -> list[list[float]]:
        """Unit-length vectors for `texts`, in order; ModelError when the provider cannot give them."""
        if not texts:
            return []
        body: dict = {"model": self.model, "input": [t[:MAX_INPUT_CHARS] for t in texts], "encoding_format": "float"}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        timeout = QUERY_TIMEOUT if query else BATCH_TIMEOUT
        for attempt in range(1, max(1, attempts) + 1):
            try:
                response = shared_http_client().post(self.url, json=body, headers=headers, timeout=timeout)
            except httpx.HTTPError as exc:
                error: ModelError = ModelUnavailable(f"embeddings provider unreachable: {type(exc).__name__}")
                wait = exponential(attempt, 2.0, RETRY_AFTER_CAP)
            else:
                if response.status_code < 300:
                    return parse(response, len(texts))
                error, wait = _status_error(response)
            if wait is None or attempt >= attempts:
                raise error
            time.sleep(wait)
        raise AssertionError("unreachable")


def _status_error(response: httpx.Response) -> tuple[ModelError, float | None]:
    """The error for an error status, and how long to wait before another try (None: do not retry)."""
    message = f"embeddings provider answered {response.status_code}: {error_message(response)}"
    if response.status_code in (401, 403):
        return ModelAuthError(message), None
    if response.status_code == 429 or response.status_code >= 500:
        retry_after = retry_after_of(response)
        wait = 1.0 if retry_after is None else retry_after
        return ModelUnavailable(message), (wait if wait <= RETRY_AFTER_CAP else None)
    return ModelRequestError(message), None


def parse(response: httpx.Response, expected: int) -> list[list[float]]:
    """The response's vectors in input order, each scaled to unit length; a malformed answer is an error."""
    try:
        data = response.json()["data"]
        rows = sorted(data, key=lambda row: int(row["index"])) if all("index" in r for r in data) else list(data)
        vectors = [[float(x) for x in row["embedding"]] for row in rows]
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ModelUnavailable("the embeddings provider's answer is not an OpenAI embeddings list") from None
    if len(vectors) != expected:
        raise ModelUnavailable(f"the embeddings provider answered {len(vectors)} vectors for {expected} inputs")
    width = len(vectors[0])
    if not 0 < width <= MAX_DIMENSIONS or any(len(v) != width for v in vectors):
        raise ModelUnavailable("the embeddings provider answered vectors of different, zero or absurd lengths")
    return [_unit(v) for v in vectors]


def _unit(vector: list[float]) -> list[float]:
    """The vector scaled to length 1 (cosine similarity becomes a dot product); NaN or zero is refused."""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if not math.isfinite(norm) or norm == 0:
        raise ModelUnavailable("the embeddings provider answered a zero or non-finite vector")
    return [x / norm for x in vector]
