"""What a finished run was (its turn's end and the commands the gate refused) and what it says to the user."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

LATE_NOTE_AFTER = timedelta(minutes=1)


@dataclass(frozen=True)
class Outcome:
    """A run's status (completed, failed, refused), its output and why it did not complete."""

    status: str
    output: str | None
    error: str | None


def judge(turn_status: str, output: str | None, error_code: str | None, error_message: str | None,
          refusals: list[tuple[str, str]]) -> Outcome:
    """The run's real outcome: a failed or cancelled turn failed; a command the gate refused makes it refused."""
    if turn_status == "failed":
        return Outcome("failed", output, error_message or error_code or "the run failed")
    if turn_status == "cancelled":
        return Outcome("failed", output, error_message or "the run was cancelled")
    if refusals:
        command, reason = refusals[0]
        return Outcome("refused", output, f"the command `{command[:200]}` was refused ({reason[:300]})")
    return Outcome("completed", output, None)


def late_note(late_by_seconds: float, due_at: datetime) -> str:
    """The line saying a run started late (after downtime), or nothing when it started on time."""
    if late_by_seconds < LATE_NOTE_AFTER.total_seconds():
        return ""
    return f"(ran late by {_span(late_by_seconds)}: it was due at {due_at:%Y-%m-%d %H:%M} UTC)\n"


def _span(seconds: float) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n > 1 else ''}"
    return f"{int(seconds)} seconds"


def message(job_name: str, status: str, output: str | None, error: str | None, late_by_seconds: float,
            due_at: datetime) -> str:
    """The text delivered for a run: its answer, or "failed: why" / "refused: why" / "missed: when"."""
    if status == "missed":
        return f"[{job_name}] missed: it was due at {due_at:%Y-%m-%d %H:%M} UTC and the stack was not running then."
    head = f"[{job_name}] " + late_note(late_by_seconds, due_at)
    if status == "completed":
        return head + (output or "(no answer)")
    text = head + f"{status}: {error or 'no reason given'}"
    return text + (f"\n\n{output}" if output else "")
