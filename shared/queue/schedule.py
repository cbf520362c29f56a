"""The beat schedule: one dict, every entry with `expires` so a stalled worker never builds a backlog.

Only one beat may run (compose runs one curator replica). A second one by mistake costs duplicate
work, never a wrong result: every periodic task is idempotent (see services/curator/tasks.py).
"""

from __future__ import annotations

from shared.config import Settings
from shared.queue.names import CHECK_CURATION, SWEEP_EXPIRED, SWEEP_TURNS, TICK_CRON


def _entry(task: str, interval: float) -> dict:
    """Every `interval` seconds; a message nobody took within 90% of that is dropped, not run late."""
    return {"task": task, "schedule": interval, "options": {"expires": max(1.0, interval * 0.9)}}


def beat_schedule(settings: Settings) -> dict:
    return {
        "sweep-turns": _entry(SWEEP_TURNS, settings.sweep_interval_seconds),
        "check-curation": _entry(CHECK_CURATION, settings.curator_check_seconds),
        "sweep-expired": _entry(SWEEP_EXPIRED, settings.expiry_sweep_seconds),
        "tick-cron": _entry(TICK_CRON, settings.cron_tick_seconds),
    }
