"""The beat schedule: one dict, every entry with `expires` so a stalled worker never builds a backlog."""

from __future__ import annotations

from shared.config import Settings
from shared.queue.names import SWEEP_TURNS


def beat_schedule(settings: Settings) -> dict:
    interval = settings.sweep_interval_seconds
    return {
        "sweep-turns": {"task": SWEEP_TURNS, "schedule": interval, "options": {"expires": max(1.0, interval * 0.9)}},
    }
