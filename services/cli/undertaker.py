"""The undertaker: a small process that outlives a killed `hstack run` just long enough to end its services.

Every service gets SIGTERM when its supervisor dies (PR_SET_PDEATHSIG), but a service that hangs in its
own shutdown would then run on with nobody to stop it, holding its port. The supervisor starts this process
with a pipe on its stdin and writes one line per child it starts: the child's process group and start time.
Only the supervisor holds the pipe's write end, so the pipe ends (EOF) exactly when the supervisor exits,
however it died. Then the undertaker waits a grace period for the groups to end on their own and SIGKILLs
whatever is left. A clean stop writes `done` first, and the undertaker leaves without touching anything.

A group is killed only while it provably is still ours: a pid is never reused while a process group of that
number exists, so either the leader is alive with the start time we recorded, or /proc has no such pid and
any process left with that group id is one of the leader's.

It imports only the standard library and `shared.ops.holders` (which reads /proc), so it starts in milliseconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import suppress

from shared.ops.holders import exists, start_of

GRACE_SECONDS = 10.0
POLL_SECONDS = 0.2


def still_ours(pgid: int, born: str | None) -> bool:
    """The group may be signalled: its leader is the process we recorded, or the leader is gone or a zombie (and
    with it any chance that the number names someone else's group while members of ours remain)."""
    now = start_of(pgid)
    return now is None or now == born


def group_alive(pgid: int) -> bool:
    return exists(pgid, os.killpg)


def bury(groups: dict[int, str | None], grace: float) -> list[int]:
    """Wait up to `grace` for the groups to end, then SIGKILL those left; the groups killed."""
    deadline = time.monotonic() + grace
    left = [g for g, born in groups.items() if still_ours(g, born) and group_alive(g)]
    while left and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        left = [g for g in left if still_ours(g, groups[g]) and group_alive(g)]
    killed = []
    for pgid in left:
        if still_ours(pgid, groups[pgid]):
            try:
                os.killpg(pgid, signal.SIGKILL)
                killed.append(pgid)
            except (ProcessLookupError, PermissionError):
                pass
    return killed


def main(argv: list[str] | None = None) -> int:
    """Read `<pgid> <start time>` lines until `done` (leave) or EOF (the supervisor died: bury its services)."""
    grace = float((argv or sys.argv[1:] or [GRACE_SECONDS])[0])
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # only the pipe's end decides when this process acts
    groups: dict[int, str | None] = {}
    for line in sys.stdin.buffer:
        words = line.split()
        if words == [b"done"]:
            return 0
        if len(words) == 2 and words[0].isdigit():
            groups[int(words[0])] = words[1].decode() if words[1] != b"-" else None
    killed = bury(groups, grace)
    if killed:
        with suppress(OSError):  # the supervisor's terminal may be gone with it
            print(f"hstack undertaker: the supervisor died; killed process groups {killed} still running "
                  f"{grace:.0f}s later", file=sys.stderr, flush=True)
    return 0


def _quiet() -> suppress:
    """A pipe or wait failure is ignored: the undertaker is a safety net, never a reason to fail a start or stop."""
    return suppress(OSError, ValueError, subprocess.TimeoutExpired)


class Undertaker:
    """The supervisor's side: start the process, tell it each child, and dismiss it on a clean stop."""

    def __init__(self, grace: float = GRACE_SECONDS) -> None:
        self.grace = grace
        self.popen: subprocess.Popen | None = None

    def start(self) -> "Undertaker":
        with _quiet():
            self.popen = subprocess.Popen([sys.executable, "-m", "services.cli.undertaker", str(self.grace)],
                                          stdin=subprocess.PIPE, start_new_session=True)
        return self

    def watch(self, pid: int) -> None:
        """Record a child that leads its own process group (started with a new session)."""
        self._send(f"{pid} {start_of(pid) or '-'}\n")

    def dismiss(self) -> None:
        """The services were stopped in order: the undertaker leaves without killing anything."""
        self._send("done\n")
        if self.popen is not None:
            with _quiet():
                self.popen.stdin.close()
            with _quiet():
                self.popen.wait(5)

    def _send(self, text: str) -> None:
        if self.popen is None or self.popen.stdin.closed:
            return
        with _quiet():
            self.popen.stdin.write(text.encode())
            self.popen.stdin.flush()


if __name__ == "__main__":
    sys.exit(main())
