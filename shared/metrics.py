"""Metrics every process records into Redis and the api exposes at /metrics (Prometheus text).

Workers and the api are separate processes, so counters and histogram buckets live in Redis
hashes (`metrics:*`); recording is one pipelined round trip and never raises.
"""

from __future__ import annotations

import logging
from bisect import bisect_left

import redis

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
}


def _label_key(labels: dict[str, str] | None) -> str:
    return ",".join(f'{k}="{v}"' for k, v in sorted((labels or {}).items()))


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


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _histogram_lines(name: str, raw: dict[str, str]) -> list[str]:
    series: dict[str, dict] = {}
    for field, value in raw.items():
        lk, kind, *rest = field.split("|")
        entry = series.setdefault(lk, {"buckets": [0] * (len(LATENCY_BUCKETS) + 1), "sum": 0.0, "count": 0})
        if kind == "bucket":
            entry["buckets"][int(rest[0])] += int(float(value))
        else:
            entry[kind] = float(value)
    lines = []
    for lk, entry in sorted(series.items()):
        prefix = lk + "," if lk else ""
        running = 0
        for bound, count in zip((*LATENCY_BUCKETS, float("inf")), entry["buckets"]):
            running += count
            le = "+Inf" if bound == float("inf") else repr(bound)
            lines.append(f'{name}_bucket{{{prefix}le="{le}"}} {running}')
        braces = f"{{{lk}}}" if lk else ""
        lines.append(f"{name}_sum{braces} {_fmt(entry['sum'])}")
        lines.append(f"{name}_count{braces} {_fmt(entry['count'])}")
    return lines


def render(r: redis.Redis, gauges: dict[str, tuple[str, dict[str, float]]]) -> str:
    """The Prometheus exposition of Redis-held metrics plus gauges computed by the caller.

    `gauges` maps a metric name to (help, {label-string: value}).
    """
    lines: list[str] = []
    for name, help_text in HISTOGRAMS.items():
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} histogram"]
        lines += _histogram_lines(name, r.hgetall(f"metrics:{name}"))
    for name, help_text in COUNTERS.items():
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} counter"]
        for lk, value in sorted(r.hgetall(f"metrics:{name}").items()):
            lines.append(f"{name}{{{lk}}} {_fmt(float(value))}" if lk else f"{name} {_fmt(float(value))}")
    for name, (help_text, values) in gauges.items():
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        for lk, value in sorted(values.items()):
            lines.append(f"{name}{{{lk}}} {_fmt(value)}" if lk else f"{name} {_fmt(value)}")
    return "\n".join(lines) + "\n"
