"""When `hstack run` restarts a crashed service: backoff, its reset after a healthy minute, the crash-loop limit."""

from __future__ import annotations

import signal
from dataclasses import dataclass

from shared.backoff import exponential

BACKOFF_FIRST_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 30.0
HEALTHY_RESET_SECONDS = 60.0
CRASH_LOOP_LIMIT = 8  # crashes in a row, none after a healthy minute: 1+2+4+8+16+30+30 s of trying, then give up


def exit_reason(returncode: int | None) -> str:
    """`was killed by SIGKILL` or `exited with code 1`, from a Popen return code."""
    if returncode is None:
        return "is gone"
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


@dataclass
class RestartPolicy:
    """Backoff doubling from `first` to `cap`; a service healthy for `healthy_reset` seconds starts over at `first`."""

    first: float = BACKOFF_FIRST_SECONDS
    cap: float = BACKOFF_MAX_SECONDS
    healthy_reset: float = HEALTHY_RESET_SECONDS
    limit: int = CRASH_LOOP_LIMIT
    crashes: int = 0
    healthy_since: float | None = None

    def healthy(self, now: float) -> None:
        """The service became ready (again) at `now`."""
        if self.healthy_since is None:
            self.healthy_since = now

    def crashed(self, now: float) -> float | None:
        """The delay before the next start, or None when the service crash-loops past the limit."""
        if self.healthy_since is not None and now - self.healthy_since >= self.healthy_reset:
            self.crashes = 0
        self.healthy_since = None
        self.crashes += 1
        if self.crashes >= self.limit:
            return None
        return exponential(self.crashes, self.first, self.cap)
