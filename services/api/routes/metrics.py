"""Prometheus metrics for the admin key or METRICS_TOKEN: Redis-held counters and histograms plus live gauges."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4 as PROMETHEUS_TEXT

from services.api.deps import DbDep, MetricsKey, RedisDep, SettingsDep
from services.api.schemas import error_responses
from services.api.stack_status import services_up, turn_counts
from shared.ops import metrics
from shared.queue.app import queue_depths

router = APIRouter(tags=["health"])


@router.get("/metrics", response_class=Response, responses={200: {"content": {PROMETHEUS_TEXT: {}}},
                                                            **error_responses(401, 403)})
def prometheus_metrics(request: Request, db: DbDep, r: RedisDep, settings: SettingsDep, _key: MetricsKey) -> Response:
    """Prometheus text format 0.0.4 (OpenMetrics when the scraper asks for it); bearer admin key or METRICS_TOKEN."""
    gauges: metrics.Gauges = {
        "hstack_turns": ("Turns by status.", "status", turn_counts(db)),
        "hstack_queue_depth": ("Tasks waiting in each queue.", "queue", queue_depths(r, settings)),
        "hstack_services_up": ("Live instances per service.", "service", services_up(r)),
    }
    body, content_type = metrics.exposition(r, gauges, request.headers.get("accept"))
    return Response(body, media_type=content_type)
