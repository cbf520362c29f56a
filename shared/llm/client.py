"""LLMClient: one model call with retries, backoff and the fallback model; `get_llm` caches one per process."""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from typing import Callable
from urllib.parse import urlparse

import httpx

from shared.ops import metrics
from shared.config import Settings
from shared.errors import ContextOverflow, ModelError, ModelRequestError, ModelUnavailable
from shared.llm.anthropic import AnthropicTransport
from shared.llm.backoff import pause, retry_delay
from shared.llm.classify import Verdict, classify
from shared.llm.deltas import DeltaRelay
from shared.llm.openai_compat import OnDelta, OpenAICompatTransport
from shared.llm.truncation import Continuation
from shared.llm.types import Cancelled, Completion
from shared.http.nodelay import NoDelayClient

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 10.0
# Idle connections a process keeps for its next calls. httpcore's pool looks over every connection it holds
# for each idle one, on every request and every response's end: with 200 kept after a 200-call burst, the
# worker's CPU per turn rose by ~6 ms. A few serve a user's turns one after another without a handshake.
KEEPALIVE_CONNECTIONS = 8
DEFAULT_MODEL = "hermes-demo"
PROVIDERS = ("auto", "openai", "anthropic")
Sleep = Callable[[float, Callable[[], bool]], None]


class _Exhausted(Exception):
    """Every attempt on one model failed with a retryable error."""

    def __init__(self, summary: str) -> None:
        super().__init__(summary)
        self.summary = summary


def _never() -> bool:
    return False


_http: tuple[int, httpx.Client] | None = None
_lock = threading.Lock()


def pooled_http_client() -> httpx.Client:
    """A client for model calls: hundreds at once, a few connections kept between them, TCP_NODELAY."""
    limits = httpx.Limits(max_connections=512, max_keepalive_connections=KEEPALIVE_CONNECTIONS)
    return NoDelayClient(limits=limits, timeout=httpx.Timeout(60.0, connect=CONNECT_TIMEOUT))


def shared_http_client() -> httpx.Client:
    """This process's pooled HTTP client (new after a fork)."""
    global _http
    with _lock:
        if _http is None or _http[0] != os.getpid():
            _http = (os.getpid(), pooled_http_client())
        return _http[1]


def is_anthropic(settings: Settings) -> bool:
    """The model speaks Anthropic Messages: LLM_PROVIDER=anthropic, or `auto` with an api.anthropic.com URL."""
    provider = settings.llm_provider.strip().lower()
    host = urlparse(settings.llm_base_url or "").hostname
    return provider == "anthropic" or (provider == "auto" and host == "api.anthropic.com")


def make_transport(settings: Settings, http: httpx.Client, api_key: str | None, timeout: httpx.Timeout):
    """Anthropic Messages for LLM_PROVIDER=anthropic or an api.anthropic.com URL; else OpenAI-compatible."""
    if settings.llm_provider.strip().lower() not in PROVIDERS:
        raise ValueError(f"LLM_PROVIDER must be one of {', '.join(PROVIDERS)}, not {settings.llm_provider!r}")
    if is_anthropic(settings):
        return AnthropicTransport(http, settings.llm_base_url, api_key, timeout, settings.llm_max_tokens)
    return OpenAICompatTransport(http, settings.llm_base_url, api_key, timeout)


class LLMClient:
    """Calls the configured model provider; see `complete`."""

    def __init__(self, settings: Settings, *, http: httpx.Client | None = None, redis=None,
                 sleep: Sleep = pause, rng: random.Random | None = None) -> None:
        self.settings = settings
        self.model = settings.llm_model or DEFAULT_MODEL
        self.fallback_model = settings.llm_fallback_model or None
        self.redis = redis
        self._sleep = sleep
        self._rng = rng
        self._api_key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        read = settings.llm_timeout_seconds
        timeout = httpx.Timeout(read, connect=CONNECT_TIMEOUT)
        self._transport = None
        if settings.llm_base_url:
            self._transport = make_transport(settings, http or shared_http_client(), self._api_key, timeout)

    def complete(self, messages: list[dict], tools: list[dict] | None = None, on_delta: OnDelta | None = None,
                 cancelled: Callable[[], bool] | None = None, *, stream: bool = True,
                 kind: str | None = None) -> Completion:
        """Ask the model for the next assistant message (streamed by default, deltas to `on_delta`).

        Retries 429/5xx/timeouts with backoff, then tries the fallback model; raises ModelAuthError,
        ModelRequestError (ContextOverflow when the prompt does not fit), ModelUnavailable, or
        Cancelled once `cancelled()` is true. An answer cut by the output limit is continued (as the
        anchor: up to 3 times, with a raised max_tokens) and joined; a cut tool call is asked again,
        never returned half-formed. With a `kind` ("turn", "review"), the call's prompt tokens and the
        part the provider served from its prompt cache are counted in /metrics under that kind.
        """
        if self._transport is None:
            raise ModelUnavailable("No model provider is configured: set LLM_BASE_URL (and LLM_MODEL).")
        cancelled = cancelled or _never
        started = time.monotonic()
        try:
            relay = DeltaRelay(on_delta)
            continuation = Continuation(messages, self.settings.llm_max_tokens)
            completion = self._with_fallback(messages, tools, relay, cancelled, stream, None)
            while (request := continuation.next(completion)) is not None:
                log.warning("the answer was cut by the output limit; %s", request.why)
                if request.continues:
                    relay.keep_sent()
                completion = self._with_fallback(request.messages, tools, relay, cancelled, stream,
                                                 request.max_tokens)
            completion = continuation.joined(completion)
        except ModelError:
            self._record("error", started)
            raise
        self._record("ok", started, completion, kind)
        return completion

    def _with_fallback(self, messages, tools, relay: DeltaRelay, cancelled, stream, max_tokens) -> Completion:
        models = [self.model] + ([self.fallback_model] if self.fallback_model not in (None, self.model) else [])
        last_error: ModelError | None = None
        for index, model in enumerate(models):
            if index:
                log.warning("model %s failed; falling back to %s", models[index - 1], model)
            try:
                return self._attempts(model, messages, tools, relay, cancelled, stream, max_tokens)
            except ContextOverflow:
                raise  # the caller compresses and asks again; another model would not see less
            except ModelRequestError as exc:
                last_error = exc
            except _Exhausted as exc:
                last_error = ModelUnavailable(f"The model provider kept failing: {exc.summary}")
        raise last_error

    def _attempts(self, model, messages, tools, relay: DeltaRelay, cancelled, stream, max_tokens) -> Completion:
        """Up to llm_max_retries + 1 attempts on one model."""
        attempts = max(0, self.settings.llm_max_retries) + 1
        for attempt in range(1, attempts + 1):
            if cancelled():
                raise Cancelled()
            relay.new_attempt()
            try:
                if max_tokens:
                    return self._transport.send(model, messages, tools, relay.push, cancelled, stream, max_tokens)
                return self._transport.send(model, messages, tools, relay.push, cancelled, stream)
            except (Cancelled, ModelError):
                raise
            except Exception as exc:  # noqa: BLE001 - classify() re-raises anything it does not know
                verdict = self._verdict(exc)
            if verdict.error is not None:
                raise verdict.error
            if attempt == attempts:
                raise _Exhausted(verdict.summary)
            self._retry_pause(model, attempt, attempts, verdict, cancelled)
        raise AssertionError("unreachable")

    def _verdict(self, exc: Exception) -> Verdict:
        """Classify a failure, keeping the API key out of the summary."""
        verdict = classify(exc)
        if self._api_key and self._api_key in verdict.summary:
            verdict = Verdict(verdict.summary.replace(self._api_key, "[REDACTED]"), verdict.retryable,
                              verdict.retry_after, verdict.error)
        return verdict

    def _retry_pause(self, model: str, attempt: int, attempts: int, verdict: Verdict, cancelled) -> None:
        s = self.settings
        delay = retry_delay(attempt, verdict.retry_after, s.llm_backoff_base_seconds, s.llm_backoff_max_seconds,
                            s.llm_retry_after_cap_seconds, self._rng)
        log.warning("model %s call failed (%s); retry %d/%d in %.2fs", model, verdict.summary, attempt,
                    attempts - 1, delay)
        self._count("retry")
        self._sleep(delay, cancelled)

    def _count(self, outcome: str) -> None:
        if self.redis is not None:
            metrics.inc(self.redis, "hstack_model_calls_total", labels={"outcome": outcome})

    def _record(self, outcome: str, started: float, completion: Completion | None = None,
                kind: str | None = None) -> None:
        if self.redis is None:
            return
        increments = [("hstack_model_calls_total", 1, {"outcome": outcome})]
        if completion is not None and kind:
            increments += [("hstack_prompt_tokens_total", completion.usage.prompt_tokens, {"kind": kind}),
                           ("hstack_cached_prompt_tokens_total", completion.usage.cached_tokens, {"kind": kind})]
        metrics.record(self.redis,
                       observations=[("hstack_model_call_duration_seconds", time.monotonic() - started, None)],
                       increments=increments)


_clients: dict[tuple, LLMClient] = {}


def _cache_key(settings: Settings, redis) -> tuple:
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    return (os.getpid(), settings.llm_base_url, key, settings.llm_model, settings.llm_fallback_model,
            settings.llm_timeout_seconds, settings.llm_max_retries, settings.llm_backoff_base_seconds,
            settings.llm_backoff_max_seconds, settings.llm_retry_after_cap_seconds, settings.llm_provider,
            settings.llm_max_tokens, id(redis))


def get_llm(settings: Settings, redis=None) -> LLMClient:
    """The process's client for these settings, sharing one pooled HTTP client."""
    key = _cache_key(settings, redis)
    client = _clients.get(key)
    if client is None:
        client = _clients.setdefault(key, LLMClient(settings, http=shared_http_client(), redis=redis))
    return client
