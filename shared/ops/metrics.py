"""Metrics every process records into Redis and the api exposes at /metrics through prometheus_client.

Workers and the api are separate processes (and hosts), so counters and histogram buckets live in Redis
hashes (`metrics:*`): that is what makes them multiprocess-safe, with no prometheus_client multiprocess
directory to share. Recording is one pipelined round trip and never raises. Exposition is a
prometheus_client Collector that reads those hashes, on a private registry rendered by the library.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_left
from typing import Iterator

import redis
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, generate_latest
from prometheus_client.metrics_core import (CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily,
                                            Metric)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

log = logging.getLogger(__name__)

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

HISTOGRAMS = {
    "hstack_turn_duration_seconds": "Time from a turn's acceptance to its end.",
    "hstack_model_call_duration_seconds": "Duration of one model call, retries included.",
}
COUNTERS = {
    "hstack_turns_finished_total": "Turns that ended, by status.",
    "hstack_tokens_total": "Model tokens, by kind (prompt, completion).",
    "hstack_model_calls_total": "Model calls, by outcome.",
    "hstack_tool_calls_total": "Tool calls, by tool.",
    "hstack_prompt_tokens_total": "Prompt tokens sent to the model, by kind (turn, review).",
    "hstack_cached_prompt_tokens_total": "Prompt tokens the provider read from its prompt cache, by kind (turn, review).",
}


LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
HISTOGRAM_FIELD = re.compile(r"(.*)\|(bucket|sum|count)(?:\|(\d+))?", re.DOTALL)
UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}

# name -> (help, label name, {label value: value}): gauges the caller computes at scrape time.
Gauges = dict[str, tuple[str, str, dict[str, float]]]


def _escape(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _label_key(labels: dict[str, str] | None) -> str:
    """The hash field naming one series: `k="v",…`, escaped as in the text format."""
    return ",".join(f'{k}="{_escape(v)}"' for k, v in sorted((labels or {}).items()))


def _labels(label_key: str) -> dict[str, str]:
    """The labels a hash field names."""
    return {k: re.sub(r"\\.", lambda m: UNESCAPE.get(m.group(0), m.group(0)), v)
            for k, v in LABEL.findall(label_key)}


def observe(r: redis.Redis, name: str, seconds: float, labels: dict[str, str] | None = None) -> None:
    """Add one observation to a histogram."""
    record(r, observations=[(name, seconds, labels)])


def inc(r: redis.Redis, name: str, amount: float = 1, labels: dict[str, str] | None = None) -> None:
    """Increase a counter."""
    record(r, increments=[(name, amount, labels)])


Sample = tuple[str, float, "dict[str, str] | None"]


def record(r: redis.Redis, *, observations: list[Sample] = (), increments: list[Sample] = ()) -> None:
    """Record histogram observations and counter increments in one round trip; never raises."""
    pipe = r.pipeline(transaction=False)
    for name, seconds, labels in observations:
        lk = _label_key(labels)
        index = bisect_left(LATENCY_BUCKETS, seconds)
        pipe.hincrby(f"metrics:{name}", f"{lk}|bucket|{index}", 1)
        pipe.hincrbyfloat(f"metrics:{name}", f"{lk}|sum", seconds)
        pipe.hincrby(f"metrics:{name}", f"{lk}|count", 1)
    for name, amount, labels in increments:
        pipe.hincrbyfloat(f"metrics:{name}", _label_key(labels), amount)
    try:
        pipe.execute()
    except redis.RedisError:
        log.warning("could not record %d metric samples", len(observations) + len(increments))


def _histogram(name: str, help_text: str, raw: dict[str, str]) -> Metric:
    family = HistogramMetricFamily(name, help_text)
    series: dict[str, dict] = {}
    for field, value in raw.items():
        lk, kind, index = HISTOGRAM_FIELD.fullmatch(field).groups()
        entry = series.setdefault(lk, {"buckets": [0] * (len(LATENCY_BUCKETS) + 1), "sum": 0.0, "count": 0.0})
        if kind == "bucket":
            entry["buckets"][int(index)] += int(float(value))
        else:
            entry[kind] = float(value)
    for lk, entry in sorted(series.items()):
        labels = _labels(lk)
        running = 0
        for bound, count in zip((*LATENCY_BUCKETS, float("inf")), entry["buckets"]):
            running += count
            family.add_sample(f"{name}_bucket", {**labels, "le": floatToGoString(bound)}, running)
        family.add_sample(f"{name}_sum", labels, entry["sum"])
        family.add_sample(f"{name}_count", labels, entry["count"])
    return family


def _counter(name: str, help_text: str, raw: dict[str, str]) -> Metric:
    family = CounterMetricFamily(name, help_text)
    for lk, value in sorted(raw.items()):
        family.add_sample(family.name + "_total", _labels(lk), float(value))
    return family


def _gauge(name: str, help_text: str, label: str, values: dict[str, float]) -> Metric:
    family = GaugeMetricFamily(name, help_text, labels=[label])
    for label_value, value in sorted(values.items()):
        family.add_metric([label_value], value)
    return family


class RedisCollector(Collector):
    """The Redis-held histograms and counters, plus gauges computed by the caller, as metric families."""

    def __init__(self, r: redis.Redis, gauges: Gauges | None = None) -> None:
        self.r = r
        self.gauges = gauges or {}

    def collect(self) -> Iterator[Metric]:
        for name, help_text in HISTOGRAMS.items():
            yield _histogram(name, help_text, self.r.hgetall(f"metrics:{name}"))
        for name, help_text in COUNTERS.items():
            yield _counter(name, help_text, self.r.hgetall(f"metrics:{name}"))
        for name, (help_text, label, values) in self.gauges.items():
            yield _gauge(name, help_text, label, values)


def _registry(r: redis.Redis, gauges: Gauges | None) -> CollectorRegistry:
    """A private registry per scrape: the process-global one would mix in this process's own collectors."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RedisCollector(r, gauges))
    return registry


def exposition(r: redis.Redis, gauges: Gauges | None = None, accept: str | None = None) -> tuple[bytes, str]:
    """The body and content type for a scrape; `accept` may ask for OpenMetrics, else text format 0.0.4."""
    encoder, content_type = choose_encoder(accept or "")
    return encoder(_registry(r, gauges)), content_type


def render(r: redis.Redis, gauges: Gauges | None = None) -> str:
    """The Prometheus text exposition (format 0.0.4) of Redis-held metrics plus the caller's gauges."""
    return generate_latest(_registry(r, gauges)).decode()
