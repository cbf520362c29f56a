"""`hstack status`: what runs, how deep the queues are, how turns are doing — as a compact table."""

from __future__ import annotations

import time
from typing import Any, TextIO

from prometheus_client.parser import text_string_to_metric_families

from services.cli.client import ApiClient

CACHE_COUNTERS = {"hstack_prompt_tokens": "prompt", "hstack_cached_prompt_tokens": "cached"}


def ago(seconds_since_epoch: Any) -> str:
    """`3s ago` for a heartbeat timestamp; `?` when there is none."""
    try:
        delta = max(0.0, time.time() - float(seconds_since_epoch))
    except (TypeError, ValueError):
        return "?"
    return f"{delta:.0f}s ago" if delta < 120 else f"{delta / 60:.0f}m ago"


def table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    """Left-aligned columns, each as wide as its widest cell."""
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


def render(status: dict) -> list[str]:
    """The status document as printable lines."""
    services = status.get("services") or []
    lines = [f"services ({len(services)} running)"]
    lines += table([[str(s.get("service", "?")), str(s.get("host", "")), f"pid {s.get('pid', '?')}",
                     f"seen {ago(s.get('seen'))}"] for s in services]) or ["  none: start them with `hstack run`"]
    queues = status.get("queues") or {}
    lines.append("queues    " + "  ".join(f"{name} {depth}" for name, depth in sorted(queues.items())))
    turns = status.get("turns") or {}
    lines.append("turns     " + ("  ".join(f"{name} {count}" for name, count in sorted(turns.items())) or "none yet"))
    recent = status.get("recent_turns") or []
    if recent:
        lines.append("recent turns")
        lines += table([[str(t.get("id", "")), str(t.get("status", "")), str(t.get("session_id", "")),
                         str(t.get("created_at", ""))[:19]] for t in recent])
    return lines


def status(client: ApiClient, out: TextIO) -> int:
    """Print the stack's status; CliError (non-zero exit) when the api cannot be reached."""
    for line in render(client.get("/v1/admin/status")):
        out.write(line + "\n")
    out.write(cache_line(prompt_tokens_by_kind(client.text("/metrics"))) + "\n")
    for line in undelivered(client.get("/v1/admin/outbox", status="failed")):
        out.write(line + "\n")
    return 0


def prompt_tokens_by_kind(exposition: str) -> dict[str, dict[str, float]]:
    """{kind: {"prompt": n, "cached": n}} from the /metrics prompt-token counters (turn, review)."""
    totals: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(exposition):
        field = CACHE_COUNTERS.get(family.name)
        for sample in family.samples if field else ():
            if sample.name.endswith("_total"):
                kind = totals.setdefault(sample.labels.get("kind", "?"), {"prompt": 0.0, "cached": 0.0})
                kind[field] += sample.value
    return totals


def cache_line(totals: dict[str, dict[str, float]]) -> str:
    """The prompt-cache hit share (cached / prompt tokens) by kind: what the provider did not bill in full."""
    shares = [f"{kind} {t['cached'] / t['prompt']:.0%} of {t['prompt']:,.0f} tokens"
              for kind, t in sorted(totals.items()) if t["prompt"] > 0]
    return "prompt cache  " + ("  ".join(shares) or "no model calls yet")


def undelivered(failed: list[dict]) -> list[str]:
    """Gateway replies that finally failed to go out (the outbox gave up on them)."""
    if not failed:
        return []
    lines = [f"gateway replies not delivered: {len(failed)}"]
    return lines + table([[str(i.get("id", "")), str(i.get("target", ""))[:40], f"{i.get('attempts', 0)} attempts",
                           str(i.get("last_error") or "")[:60]] for i in failed[:10]])
