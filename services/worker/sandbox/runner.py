"""Running one command for one user, in the foreground, with a timeout and capped output."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import cgroup, quota
from .launcher import Sandbox, launch
from .limits import Limits
from .output import OUTPUT_CHARS, Capture

READ_BYTES = 64 * 1024
DRAIN_SECONDS = 2.0
CANCEL_POLL_SECONDS = 0.1  # how often a running command looks at its turn's cancel flag


@dataclass(frozen=True)
class Result:
    """What a command did: its (capped) output, exit code, and whether it timed out or was cut."""

    output: str
    exit_code: int
    timed_out: bool
    truncated: bool
    full_output_path: str | None
    cancelled: bool = False
    over_quota: str | None = None  # set when the workspace is past its quota after the command

    def text(self, timeout: float | None = None) -> str:
        """The result as the model reads it: output, then what happened."""
        lines = [self.output.rstrip("\n")] if self.output else []
        if self.cancelled:
            lines.append("[cancelled: the turn was cancelled, so the command and all its processes were killed]")
        elif self.timed_out:
            lines.append(f"[timed out after {timeout:g} s: the command and all its processes were killed]"
                         if timeout else "[timed out: the command and all its processes were killed]")
        if self.over_quota:
            lines.append(f"[{self.over_quota}]")
        lines.append(f"[exit code: {self.exit_code}]")
        return "\n".join(lines)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the command's process group; under bwrap that takes the whole PID namespace with it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def exit_status(returncode: int) -> int:
    """Shell convention: a death by signal N is 128 + N."""
    return returncode if returncode >= 0 else 128 - returncode


def run(command: str, *, workspace: Path, timeout: float, limits: Limits | None = None,
        env_passthrough: tuple[str, ...] = (), network: bool = True, sandbox: Sandbox | None = None,
        output_chars: int = OUTPUT_CHARS, workdir: str = "", cancelled: Callable[[], bool] | None = None) -> Result:
    """`bash -c command` in the user's workspace (in `workdir` inside it); raises SandboxUnavailable when
    bwrap cannot start. A true `cancelled()` kills the command as a timeout would."""
    if sandbox is None:
        sandbox = Sandbox(limits=limits or Limits(), env_passthrough=tuple(env_passthrough), network=network)
    workspace = Path(workspace)
    capture = Capture(workspace, limit=output_chars, limits=sandbox.limits)
    group = cgroup.acquire(workspace)
    try:
        proc = launch(command, workspace=workspace, sandbox=sandbox, stdout=subprocess.PIPE, workdir=workdir,
                      group=group)
        stop = Stop(time.monotonic() + timeout, cancelled or (lambda: False),
                    quota.Watch(workspace, sandbox.limits.quota_mb).over)
        try:
            _pump(proc, capture, stop)
        finally:
            kill_group(proc)  # leftovers of a finished command (e.g. `sleep 99 &` in `none` mode) go too
            proc.stdout.close()
            proc.wait()
    finally:
        cgroup.release(group)
    output, truncated, path = capture.close()
    full = quota.over_quota(workspace, sandbox.limits.quota_mb)
    if stop.over_quota:
        full = "killed: its writes took the workspace past its quota; " + (full or "it is back under it")
    return Result(output, exit_status(proc.returncode), stop.timed_out, truncated, path, stop.cancelled, full)


class Stop:
    """Why a command must stop early: its deadline passed, its turn was cancelled or its workspace is full."""

    def __init__(self, deadline: float, cancelled: Callable[[], bool], over_quota: Callable[[], bool] = lambda: False) -> None:
        self.deadline, self._cancelled, self._over_quota = deadline, cancelled, over_quota
        self.timed_out = self.cancelled = self.over_quota = False

    def due(self) -> bool:
        if self._cancelled():
            self.cancelled = True
        elif time.monotonic() >= self.deadline:
            self.timed_out = True
        elif self._over_quota():
            self.over_quota = True
        return self.timed_out or self.cancelled or self.over_quota

    def wait_for(self) -> float:
        return max(0.0, min(self.deadline - time.monotonic(), CANCEL_POLL_SECONDS))


def _pump(proc: subprocess.Popen, capture: Capture, stop: Stop) -> None:
    """Copy output into the capture until the command ends, or kill it when `stop` says so."""
    fd = proc.stdout.fileno()
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            if stop.due():
                kill_group(proc)
                _drain(fd, sel, capture)
                return
            if not sel.select(stop.wait_for()):
                continue
            chunk = os.read(fd, READ_BYTES)
            if not chunk:
                break
            capture.feed(chunk)
    # The output closed; the command may still be running (it closed its stdout itself).
    while proc.poll() is None:
        if stop.due():
            kill_group(proc)
            return
        try:
            proc.wait(timeout=stop.wait_for() or CANCEL_POLL_SECONDS)
        except subprocess.TimeoutExpired:
            pass


def _drain(fd: int, sel: selectors.BaseSelector, capture: Capture) -> None:
    """Read what the killed command left in the pipe, for a bounded time."""
    end = time.monotonic() + DRAIN_SECONDS
    while time.monotonic() < end and sel.select(max(0.0, end - time.monotonic())):
        chunk = os.read(fd, READ_BYTES)
        if not chunk:
            return
        capture.feed(chunk)
