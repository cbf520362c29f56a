"""Sort a failed model call: retry it, or which error the caller sees."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

import re

from shared.errors import ContextOverflow, ModelAuthError, ModelError, ModelRequestError

RETRYABLE_STATUSES = {408, 409, 425, 429}
# How providers word "the prompt does not fit" (OpenAI, Anthropic, vLLM, llama.cpp, Ollama, OpenRouter, Gemini).
OVERFLOW = re.compile(
    r"context[ _-]?length|context[ _-]?window|maximum context|prompt is too long|too many tokens|"
    r"input is too long|exceeds? the (?:model'?s? )?(?:maximum|max|context)|reduce the length|token limit",
    re.IGNORECASE)
SUMMARY_CHARS = 300


class ProviderHTTPError(Exception):
    """The provider answered with an error status (or an error event inside a stream)."""

    def __init__(self, status: int, message: str, retry_after: float | None = None) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message[:SUMMARY_CHARS]
        self.retry_after = retry_after


class ProviderProtocolError(Exception):
    """The provider answered 200 with something that is not a readable completion."""


@dataclass(frozen=True)
class Verdict:
    """What to do about one failure: retry (maybe after `retry_after`) or raise `error`."""

    summary: str
    retryable: bool
    retry_after: float | None = None
    error: ModelError | None = None


def classify_status(status: int, message: str, retry_after: float | None = None) -> Verdict:
    """401/403 → auth error; 408/409/425/429/5xx → retry; any other status → request error."""
    summary = f"HTTP {status}: {message}"
    if status in (400, 413, 422) and OVERFLOW.search(message):
        error = ContextOverflow(f"The prompt is longer than the model's context window (HTTP {status}): {message}")
        return Verdict(summary, False, error=error)
    if status in (401, 403):
        error = ModelAuthError(f"The model provider rejected the API key (HTTP {status}). Check LLM_API_KEY.")
        return Verdict(summary, False, error=error)
    if status in RETRYABLE_STATUSES or status >= 500:
        return Verdict(summary, True, retry_after)
    error = ModelRequestError(f"The model provider refused the request (HTTP {status}): {message}")
    return Verdict(summary, False, error=error)


def classify(exc: Exception) -> Verdict:
    """The verdict for an exception raised while calling the provider."""
    if isinstance(exc, ProviderHTTPError):
        return classify_status(exc.status, exc.message, exc.retry_after)
    if isinstance(exc, ProviderProtocolError):
        return Verdict(f"unreadable response: {exc}"[:SUMMARY_CHARS], True)
    if isinstance(exc, httpx.TimeoutException):
        return Verdict(f"timed out ({type(exc).__name__})", True)
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
        error = ModelRequestError(f"LLM_BASE_URL is not a usable http(s) URL: {exc}")
        return Verdict(str(exc), False, error=error)
    if isinstance(exc, httpx.RequestError):
        return Verdict(f"connection failed ({type(exc).__name__}: {exc})"[:SUMMARY_CHARS], True)
    raise exc
