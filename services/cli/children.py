"""Child processes of `hstack run`: each in its own process group, its output prefixed like compose."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import TextIO

NAME_WIDTH = 8


class Console:
    """Serialises lines from the supervisor and every child onto one stream."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self._lock = threading.RLock()  # re-entrant: the signal handler prints from the main thread

    def say(self, text: str = "") -> None:
        with self._lock:
            self.out.write(text + "\n")
            self.out.flush()

    def prefixed(self, name: str, line: str) -> None:
        self.say(f"{name:<{NAME_WIDTH}} | {line}")


class Child:
    """One service process; a terminal's Ctrl-C reaches the supervisor only, which stops children in order."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], console: Console) -> None:
        self.name = name
        self.argv = argv
        self.env = env
        self.console = console
        self.popen: subprocess.Popen | None = None
        self._pump: threading.Thread | None = None
        self.stopping = False

    def start(self) -> "Child":
        self.popen = subprocess.Popen(
            self.argv, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._pump = threading.Thread(target=self._copy_output, name=f"pump-{self.name}", daemon=True)
        self._pump.start()
        return self

    def _copy_output(self) -> None:
        for raw in iter(self.popen.stdout.readline, b""):
            self.console.prefixed(self.name, raw.decode("utf-8", "replace").rstrip("\r\n"))
        self.popen.stdout.close()

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def returncode(self) -> int | None:
        return self.popen.poll() if self.popen else None

    def signal(self, sig: int) -> None:
        """Signal the child's whole process group (celery and uvicorn may fork helpers)."""
        if not self.alive():
            return
        try:
            os.killpg(self.popen.pid, sig)
        except ProcessLookupError:
            pass

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
