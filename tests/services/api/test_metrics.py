"""/metrics: who may scrape it, and an exposition Prometheus's own parser reads."""

from __future__ import annotations

import httpx
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from shared.ops import metrics
from tests.support.live import serve_api

METRICS_TOKEN = "metrics-token-0123456789abcdef"
TYPES = {
    "hstack_turn_duration_seconds": "histogram", "hstack_model_call_duration_seconds": "histogram",
    "hstack_turns_finished": "counter", "hstack_tokens": "counter", "hstack_model_calls": "counter",
    "hstack_tool_calls": "counter", "hstack_turns": "gauge", "hstack_queue_depth": "gauge",
    "hstack_services_up": "gauge",
}


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def test_metrics_need_the_admin_key_or_the_metrics_token(settings, admin_headers, user):
    """Finding: `GET /metrics` without any key answered 200 with the whole exposition (turn counts, queue depths,
    services), to anyone who could reach the api.

    Now: no key or a wrong one 401, a user's key 403, METRICS_TOKEN or the admin key 200.
    """
    with serve_api(settings.model_copy(update={"metrics_token": SecretStr(METRICS_TOKEN)})) as base:
        with httpx.Client(base_url=base, timeout=20) as http:
            assert http.get("/metrics").status_code == 401
            assert http.get("/metrics", headers=bearer("hsk_not-a-real-key")).status_code == 401
            assert http.get("/metrics", headers=user.headers).status_code == 403
            assert http.get("/metrics", headers=bearer(METRICS_TOKEN)).status_code == 200
            assert http.get("/metrics", headers=admin_headers).status_code == 200


def test_without_a_metrics_token_only_the_admin_key_scrapes(client, admin_headers, user):
    """Finding (guard): with METRICS_TOKEN unset no other token passes, and a user's key never does."""
    assert client.get("/metrics", headers=bearer(METRICS_TOKEN)).status_code == 401
    assert client.get("/metrics", headers=user.headers).status_code == 403
    assert client.get("/metrics", headers=admin_headers).status_code == 200


def test_the_exposition_parses_with_prometheus_client(client, admin_headers, redis_client):
    """Finding: prometheus_client was pinned but unused; shared/ops/metrics.py wrote the text format by hand, without
    escaping label values (a `"` in a label broke the whole scrape) and ignoring a scraper asking for OpenMetrics.

    The exposition parses with prometheus_client's parsers, names and types unchanged.
    """
    label = 'say "hi" \\ bye'
    metrics.inc(redis_client, "hstack_tool_calls_total", labels={"tool": label})
    metrics.observe(redis_client, "hstack_model_call_duration_seconds", 0.2)

    response = client.get("/metrics", headers=admin_headers)
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    assert {name: families[name].type for name in TYPES} == TYPES
    assert any(s.labels == {"tool": label} and s.value >= 1 for s in families["hstack_tool_calls"].samples)
    buckets = [s for s in families["hstack_model_call_duration_seconds"].samples if s.name.endswith("_bucket")]
    assert buckets[-1].labels["le"] == "+Inf" and buckets[-1].value >= 1

    openmetrics = client.get("/metrics", headers={**admin_headers, "Accept": "application/openmetrics-text"})
    assert openmetrics.headers["content-type"].startswith("application/openmetrics-text")
    assert {f.name for f in openmetrics_families(openmetrics.text)} >= set(TYPES)
