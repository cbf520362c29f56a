"""Liveness, readiness, metrics and the OpenAPI document."""

from __future__ import annotations

import httpx

from tests.services.api.helpers import error_of
from tests.support.env import free_port
from tests.support.factories import make_session
from tests.support.live import serve_api


def test_healthz_needs_nothing(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz_checks_the_database_and_redis(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "checks": {"database": "ok", "redis": "ok"}}


def test_readyz_names_a_dead_redis(settings):
    dead = settings.model_copy(update={"redis_url": f"redis://127.0.0.1:{free_port()}/0"})
    with serve_api(dead) as base:
        response = httpx.get(f"{base}/readyz", timeout=10)
        assert httpx.get(f"{base}/healthz").status_code == 200
    assert response.status_code == 503
    error = error_of(response)
    assert error["code"] == "service_unavailable"
    assert "redis" in error["message"] and "database" not in error["message"]


def test_metrics_expose_turns_queues_and_services(client, admin_headers, db, user):
    session = make_session(db, user.id)
    client.post(f"/v1/sessions/{session.id}/turns", headers=user.headers, json={"input": "count me"})
    response = client.get("/metrics", headers=admin_headers)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    lines = response.text.splitlines()
    queued = next(line for line in lines if line.startswith('hstack_turns{status="queued"}'))
    assert float(queued.split()[-1]) >= 1
    assert any(line.startswith('hstack_queue_depth{queue="turns"}') for line in lines)
    assert "# TYPE hstack_services_up gauge" in lines
    assert "# TYPE hstack_turn_duration_seconds histogram" in lines


def test_admin_status_reports_the_stack(client, admin_headers, db, user):
    session = make_session(db, user.id)
    turn = client.post(f"/v1/sessions/{session.id}/turns", headers=user.headers, json={"input": "status?"}).json()
    status = client.get("/v1/admin/status", headers=admin_headers).json()
    assert set(status) == {"services", "queues", "turns", "recent_turns"}
    assert set(status["queues"]) == {"turns", "review", "curator"}
    assert status["turns"]["queued"] >= 1
    assert turn["id"] in [t["id"] for t in status["recent_turns"]]
    assert len(status["recent_turns"]) <= 10


def test_openapi_lists_every_route_with_its_response(client):
    document = client.get("/openapi.json").json()
    expected = {
        ("post", "/v1/users"), ("get", "/v1/users"), ("post", "/v1/users/{user_id}/keys"),
        ("post", "/v1/sessions"), ("get", "/v1/sessions"), ("get", "/v1/sessions/{session_id}"),
        ("get", "/v1/sessions/{session_id}/messages"), ("post", "/v1/sessions/{session_id}/turns"),
        ("get", "/v1/turns/{turn_id}"), ("post", "/v1/turns/{turn_id}/cancel"), ("get", "/v1/turns/{turn_id}/events"),
        ("post", "/v1/chat/completions"), ("get", "/v1/models"), ("get", "/v1/admin/status"),
        ("get", "/healthz"), ("get", "/readyz"), ("get", "/metrics"),
    }
    listed = {(method, path) for path, ops in document["paths"].items() for method in ops}
    assert expected <= listed
    for method, path in expected:
        success = next(code for code in document["paths"][path][method]["responses"] if code.startswith("2"))
        assert document["paths"][path][method]["responses"][success]["content"], (method, path)
    assert "bearer" in str(document["components"]["securitySchemes"]).lower()
