"""Child processes of `hstack run`: each in its own process group, its output in DATA_DIR/logs/<name>.log."""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TextIO

from services.cli.undertaker import Undertaker

NAME_WIDTH = 8
LOG_MAX_BYTES = 10 * 1024 * 1024
LOG_BACKUPS = 2
ERRORS_SHOWN_PER_MINUTE = 5
# An error or a crash a person should see without opening the log: our text and JSON formats, uvicorn, tracebacks.
ERROR_LINE = re.compile(r'^(error|critical)\s|^(ERROR|CRITICAL):|"level": "(error|critical)"')


class Console:
    """Serialises lines from the supervisor onto one stream."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self._lock = threading.RLock()  # re-entrant: the signal handler prints from the main thread

    def say(self, text: str = "") -> None:
        with self._lock:
            self.out.write(text + "\n")
            self.out.flush()

    def prefixed(self, name: str, line: str) -> None:
        self.say(f"{name:<{NAME_WIDTH}} | {line}")


class RotatingLog:
    """An append-only log file that rolls over to `<name>.1`, `<name>.2` past `max_bytes` (the oldest is dropped)."""

    def __init__(self, path: Path, max_bytes: int = LOG_MAX_BYTES, backups: int = LOG_BACKUPS) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "ab")

    def write_line(self, raw: bytes) -> None:
        with self._lock:
            if self._file.tell() + len(raw) > self.max_bytes and self._file.tell() > 0:
                self._roll()
            self._file.write(raw if raw.endswith(b"\n") else raw + b"\n")
            self._file.flush()

    def _roll(self) -> None:
        self._file.close()
        for n in range(self.backups, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{n - 1}") if n > 1 else self.path
            if older.exists():
                os.replace(older, self.path.with_name(f"{self.path.name}.{n}"))
        self._file = open(self.path, "ab")

    def close(self) -> None:
        with self._lock:
            self._file.close()


class ErrorEcho:
    """Copies a service's error lines to the console, at most a few a minute so an outage does not flood it."""

    def __init__(self, name: str, console: Console, per_minute: int = ERRORS_SHOWN_PER_MINUTE) -> None:
        self.name = name
        self.console = console
        self.per_minute = per_minute
        self._window_start = 0.0
        self._shown = 0

    def __call__(self, line: str) -> None:
        if not ERROR_LINE.search(line):
            return
        now = time.monotonic()
        if now - self._window_start >= 60:
            self._window_start, self._shown = now, 0
        self._shown += 1
        if self._shown <= self.per_minute:
            self.console.prefixed(self.name, line[:300])
        elif self._shown == self.per_minute + 1:
            self.console.prefixed(self.name, f"more errors: hstack logs {self.name}")


PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def _stop_with_supervisor() -> None:
    """In the new child, before exec: SIGTERM it when `hstack run` dies, even by kill -9, so no service
    outlives its supervisor (children run in their own sessions, so a terminal's hangup does not reach them).
    The supervisor starts every child from its main thread, which lives as long as it does."""
    if _libc is not None:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class Child:
    """One service process; a terminal's Ctrl-C reaches the supervisor only, which stops children in order."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], console: Console,
                 log: RotatingLog | None = None, *, cwd: Path | None = None, uid: int | None = None,
                 pass_fds: tuple[int, ...] = (), executable: str | None = None) -> None:
        self.name = name
        self.argv = argv
        self.env = env
        self.cwd = cwd
        self.uid = uid  # set: the child runs as this uid (and gid), with no supplementary groups
        self.pass_fds = pass_fds
        self.executable = executable  # what runs, when argv[0] only names it
        self.console = console
        self.log = log
        self.echo_error = ErrorEcho(name, console)
        self.popen: subprocess.Popen | None = None
        self._pump: threading.Thread | None = None
        self.stopping = False
        self.started_at = 0.0
        self.undertaker: Undertaker | None = None  # told of every start, so a killed supervisor leaves no orphan

    def start(self) -> "Child":
        """Start (or start again) the process in a new session, its output pumped to the log."""
        self.stopping = False
        ids = {"user": self.uid, "group": self.uid, "extra_groups": []} if self.uid is not None else {}
        self.popen = subprocess.Popen(
            self.argv, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=_stop_with_supervisor, cwd=self.cwd,
            pass_fds=self.pass_fds, executable=self.executable, **ids,
        )
        self.started_at = time.monotonic()
        if self.undertaker is not None:
            self.undertaker.watch(self.popen.pid)
        self._pump = threading.Thread(target=self._copy_output, args=(self.popen,), name=f"pump-{self.name}",
                                      daemon=True)
        self._pump.start()
        return self

    def _copy_output(self, popen: subprocess.Popen) -> None:
        for raw in iter(popen.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if self.log is not None:
                self.log.write_line(raw)
            else:
                self.console.prefixed(self.name, line)
            self.echo_error(line)
        popen.stdout.close()

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def returncode(self) -> int | None:
        return self.popen.poll() if self.popen else None

    def signal(self, sig: int) -> None:
        """Signal the child's whole process group (celery and uvicorn may fork helpers)."""
        if not self.alive():
            return
        self.signal_group(sig)

    def signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def reap(self) -> None:
        """After the leader died: kill what it left in its group (the curator's beat) so a restart starts clean."""
        if self.popen is not None and not self.alive():
            self.signal_group(signal.SIGKILL)

    def wait(self, timeout: float) -> bool:
        """True when the child exited within `timeout`; its output is flushed either way."""
        if self.popen is None:
            return True
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        if self._pump is not None:
            self._pump.join(2)
        return True


def stop_all(children: list[Child], console: Console, grace_seconds: float = 10.0) -> None:
    """SIGTERM every child's group at once, wait up to `grace_seconds`, then SIGKILL what is left."""
    running = [c for c in children if c.alive()]
    for child in running:
        child.stopping = True
        child.signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    for child in running:
        if not child.wait(max(0.0, deadline - time.monotonic())):
            console.say(f"{child.name} did not stop within {grace_seconds:.0f}s: killing it")
            child.signal(signal.SIGKILL)
            child.wait(5)
