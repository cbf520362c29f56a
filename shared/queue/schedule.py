"""The beat schedule: one dict, every entry with `expires` so a stalled worker never builds a backlog.

Only one beat may run (compose runs one curator replica). A second one by mistake costs duplicate
work, never a wrong result: every periodic task is idempotent (see services/curator/tasks.py).
"""

from __future__ import annotations

from shared.config import Settings
from shared.queue.names import BACK_UP_SERVER, CHECK_CURATION, CHECK_EVOLUTION, SWEEP_EXPIRED, SWEEP_TURNS, TICK_CRON


def _entry(task: str, interval: float) -> dict:
    """Every `interval` seconds; a message nobody took within 90% of that is dropped, not run late."""
    return {"task": task, "schedule": interval, "options": {"expires": max(1.0, interval * 0.9)}}


BACKUP_CHECK_SECONDS = 600.0  # how often the beat asks whether a scheduled backup is due


def beat_schedule(settings: Settings) -> dict:
    schedule = {
        "sweep-turns": _entry(SWEEP_TURNS, settings.sweep_interval_seconds),
        "check-curation": _entry(CHECK_CURATION, settings.curator_check_seconds),
        "sweep-expired": _entry(SWEEP_EXPIRED, settings.expiry_sweep_seconds),
        "tick-cron": _entry(TICK_CRON, settings.cron_tick_seconds),
    }
    if settings.backup_interval_hours > 0:
        schedule["back-up-server"] = _entry(BACK_UP_SERVER, min(BACKUP_CHECK_SECONDS,
                                                                settings.backup_interval_hours * 3600))
    if settings.evolve_schedule_hours > 0:  # off by default: every run spends model tokens
        schedule["check-evolution"] = _entry(CHECK_EVOLUTION, settings.evolve_schedule_hours * 3600)
    return schedule
