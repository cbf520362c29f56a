"""Web search backends chosen by settings: SearXNG's JSON API (self-hosted) or Brave's hosted API.

The backend is a service the operator configured, so its address is not judged like a page the model
asks for; only the pages web_extract fetches are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import httpx

from shared.config import Settings
from shared.errors import Unavailable
from shared.http import tls

SNIPPET_CHARS = 300


@dataclass(frozen=True)
class Hit:
    title: str
    url: str
    snippet: str

    def as_dict(self) -> dict[str, str]:
        return {"title": self.title, "url": self.url, "snippet": self.snippet}


Backend = Callable[[Settings, str, int], list[Hit]]


def searxng(settings: Settings, query: str, limit: int) -> list[Hit]:
    """SearXNG's `/search?format=json` answer, first `limit` results."""
    url = settings.searxng_url.rstrip("/") + "/search"
    data = _get_json(settings, url, params={"q": query, "format": "json"}, headers={})
    return [_hit(r.get("title"), r.get("url"), r.get("content")) for r in data.get("results", [])[:limit]]


def brave(settings: Settings, query: str, limit: int) -> list[Hit]:
    """Brave Search's web results, first `limit`."""
    headers = {"X-Subscription-Token": settings.brave_search_api_key.get_secret_value(), "Accept": "application/json"}
    data = _get_json(settings, settings.brave_search_url, params={"q": query, "count": limit}, headers=headers)
    results = (data.get("web") or {}).get("results", [])
    return [_hit(r.get("title"), r.get("url"), r.get("description")) for r in results[:limit]]


def backend_for(settings: Settings) -> Backend | None:
    """The configured backend (SearXNG first), or None when web search is not configured."""
    if settings.searxng_url:
        return searxng
    if settings.brave_search_api_key is not None and settings.brave_search_api_key.get_secret_value():
        return brave
    return None


def _get_json(settings: Settings, url: str, *, params: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    try:
        with httpx.Client(trust_env=False, verify=tls.verified(False),
                          timeout=settings.web_fetch_timeout_seconds) as client:
            response = client.get(url, params=params, headers=headers)
            response.raise_for_status()
            data = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise Unavailable(f"The search backend did not answer ({type(exc).__name__}).",
                          code="search_unavailable") from exc
    return data if isinstance(data, dict) else {}


def _hit(title: Any, url: Any, snippet: Any) -> Hit:
    return Hit(str(title or "").strip(), str(url or "").strip(), " ".join(str(snippet or "").split())[:SNIPPET_CHARS])
