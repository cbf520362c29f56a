"""Background processes of the terminal, per user, held in the worker process that started them.

The table lives in memory: a process belongs to the worker that spawned it and dies with it
(bwrap's --die-with-parent), so a restart loses the table and the processes together.
--die-with-parent watches the *thread* that forked bwrap, and a tool call's thread ends with the
call; so every background process is forked by the table's one long-lived spawner thread.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from shared.errors import Conflict, NotFound

from . import cgroup, quota
from .cgroup import Group
from .launcher import Sandbox, launch
from .output import open_in_workspace, written
from .runner import exit_status, kill_group

LOG_PAGE_CHARS = 50_000
REAP_EVERY_SECONDS = quota.WATCH_SECONDS  # also how often a running process's workspace may be measured
WAIT_POLL_SECONDS = 0.2  # a wait looks at its turn's cancel flag this often


class ProcessNotFound(NotFound):
    """No such background process."""


class TooManyProcesses(Conflict):
    """This user already runs as many background processes as allowed."""

    code = "too_many_processes"


@dataclass
class Entry:
    """One background process and who owns it."""

    id: str
    user_id: str
    session_id: str | None
    command: str
    workspace: Path
    log_path: str
    proc: subprocess.Popen
    started: float
    expires: float
    watch: quota.Watch
    group: Group | None = None
    killed: str | None = None
    released: bool = False
    done: threading.Event = field(default_factory=threading.Event)

    def view(self) -> dict:
        code = self.proc.poll()
        status = "running" if code is None else ("killed" if self.killed else "exited")
        out = {"session_id": self.id, "command": self.command, "status": status, "log": self.log_path}
        if code is not None:
            out["exit_code"] = exit_status(code)
        if self.killed:
            out["killed_because"] = self.killed
        return out


class ProcessTable:
    """Start, list, poll, read, wait for and kill one user's background processes."""

    def __init__(self, *, max_per_user: int, lifetime_seconds: float, clock=time.monotonic) -> None:
        self.max_per_user, self.lifetime, self.clock = max_per_user, lifetime_seconds, clock
        self._entries: dict[str, Entry] = {}
        self._lock = threading.Lock()
        self._reaper: threading.Thread | None = None
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-spawner")

    @classmethod
    def from_settings(cls, settings) -> ProcessTable:
        return cls(max_per_user=settings.terminal_max_background,
                   lifetime_seconds=settings.terminal_background_lifetime_seconds)

    def start(self, user_id: str, session_id: str | None, command: str, *, workspace: Path, sandbox: Sandbox,
              workdir: str = "") -> dict:
        """Launch the command with its output going to a log in the workspace; returns its view."""
        workspace = Path(workspace)
        with self._lock:
            running = [e for e in self._entries.values() if e.user_id == user_id and e.proc.poll() is None]
            if len(running) >= self.max_per_user:
                raise TooManyProcesses(f"at most {self.max_per_user} background processes may run at once; "
                                       "kill one (process action=kill) first")
            proc_id = f"proc_{secrets.token_hex(6)}"
            watch = quota.Watch(workspace, sandbox.limits.quota_mb)  # before the launch: nothing after it may raise
            fd, log_path = open_in_workspace(workspace, f"{proc_id}.log", sandbox.limits)
            group = cgroup.acquire(workspace)
            try:
                proc = self._spawner.submit(launch, command, workspace=workspace, sandbox=sandbox, stdout=fd,
                                            workdir=workdir, group=group).result()
            except BaseException:
                cgroup.release(group)
                written(workspace, log_path)
                raise
            finally:
                os.close(fd)
            now = self.clock()
            entry = Entry(proc_id, user_id, session_id, command, workspace, log_path, proc, now, now + self.lifetime,
                          watch, group)
            self._entries[proc_id] = entry
            self._ensure_reaper()
        return entry.view()

    def list(self, user_id: str) -> list[dict]:
        with self._lock:
            return [e.view() for e in self._entries.values() if e.user_id == user_id]

    def poll(self, user_id: str, proc_id: str) -> dict:
        entry = self._get(user_id, proc_id)
        if entry.proc.poll() is not None:
            self._release(entry)
        view = entry.view()
        view["output_tail"] = self._read(entry, -2000, 2000)
        return view

    def log(self, user_id: str, proc_id: str, offset: int = 0, limit: int = LOG_PAGE_CHARS) -> dict:
        """A page of the process's output; a negative offset counts from the end."""
        entry = self._get(user_id, proc_id)
        view = entry.view()
        view.update(offset=offset, output=self._read(entry, offset, min(limit, LOG_PAGE_CHARS)))
        return view

    def wait(self, user_id: str, proc_id: str, timeout: float, cancelled=lambda: False) -> dict:
        """Wait up to `timeout` seconds for the process to end (less when `cancelled()` turns true); its view."""
        entry = self._get(user_id, proc_id)
        deadline = time.monotonic() + timeout
        while not cancelled() and (left := deadline - time.monotonic()) > 0:
            try:
                entry.proc.wait(timeout=min(left, WAIT_POLL_SECONDS))
                break
            except subprocess.TimeoutExpired:
                pass
        return self.poll(user_id, proc_id)

    def kill(self, user_id: str, proc_id: str, because: str = "killed on request") -> dict:
        entry = self._get(user_id, proc_id)
        self._kill(entry, because)
        return entry.view()

    def kill_all(self, user_id: str, session_id: str | None = None, because: str = "session ended") -> int:
        """Kill every running process of the user (of one session when given); how many were running."""
        with self._lock:
            victims = [e for e in self._entries.values() if e.user_id == user_id
                       and (session_id is None or e.session_id == session_id) and e.proc.poll() is None]
        for entry in victims:
            self._kill(entry, because)
        return len(victims)

    def kill_everything(self, because: str = "the worker process stopped") -> int:
        """Kill every running process of every user (worker shutdown); how many were running."""
        with self._lock:
            victims = [e for e in self._entries.values() if e.proc.poll() is None]
        for entry in victims:
            self._kill(entry, because)
        return len(victims)

    def reap(self) -> int:
        """Kill processes past their lifetime or whose workspace passed its quota, release the cgroup of
        finished ones and forget them past their lifetime; how many were killed."""
        now = self.clock()
        with self._lock:
            expired = [e for e in self._entries.values() if now >= e.expires]
            entries = list(self._entries.values())
        killed = self._kill_over_quota(entries)
        for entry in entries:
            if entry.proc.poll() is not None:
                self._release(entry)
        for entry in expired:
            if entry.proc.poll() is None:
                self._kill(entry, f"outlived TERMINAL_BACKGROUND_LIFETIME_SECONDS ({self.lifetime:g} s)")
                killed += 1
            elif now >= entry.expires + self.lifetime:
                with self._lock:
                    self._entries.pop(entry.id, None)
        return killed

    def _get(self, user_id: str, proc_id: str) -> Entry:
        with self._lock:
            entry = self._entries.get(proc_id)
        if entry is None or entry.user_id != user_id:
            raise ProcessNotFound(f"background process {proc_id} not found")
        return entry

    def _kill(self, entry: Entry, because: str) -> None:
        if entry.proc.poll() is None:
            entry.killed = because
            kill_group(entry.proc)
            entry.proc.wait()
        self._release(entry)

    def _release(self, entry: Entry) -> None:
        with self._lock:
            if entry.released:
                return
            entry.released = True
        cgroup.release(entry.group)
        written(entry.workspace, entry.log_path)

    def _kill_over_quota(self, entries: list[Entry]) -> int:
        """Kill the running processes of every workspace past its quota; how many."""
        running = [e for e in entries if e.proc.poll() is None]
        full = {e.workspace for e in running if e.watch.over()}
        for entry in running:
            if entry.workspace in full:
                self._kill(entry, f"the workspace passed its quota ({entry.watch.quota // quota.MB} MB, "
                                  "TERMINAL_WORKSPACE_QUOTA_MB)")
        return sum(e.workspace in full for e in running)

    def _read(self, entry: Entry, offset: int, limit: int) -> str:
        """Characters of the log, reading the workspace file without following a planted symlink."""
        try:
            fd = os.open(entry.workspace / entry.log_path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return ""
        with os.fdopen(fd, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            # Bytes approximate characters here; a page may split a multi-byte character.
            start = max(0, size + offset) if offset < 0 else min(offset, size)
            fh.seek(start)
            return fh.read(limit).decode("utf-8", errors="replace")

    def _ensure_reaper(self) -> None:
        if self._reaper is None or not self._reaper.is_alive():
            self._reaper = threading.Thread(target=self._reap_forever, name="sandbox-reaper", daemon=True)
            self._reaper.start()

    def _reap_forever(self) -> None:
        while True:
            time.sleep(min(REAP_EVERY_SECONDS, self.lifetime))
            self.reap()
            with self._lock:
                if not self._entries:
                    self._reaper = None
                    return


_table: ProcessTable | None = None
_table_lock = threading.Lock()


def process_table(settings) -> ProcessTable:
    """The worker process's one table of background processes, built from the first settings that ask."""
    global _table
    with _table_lock:
        if _table is None:
            _table = ProcessTable.from_settings(settings)
        return _table


def stop_background(because: str = "the worker process stopped") -> int:
    """Kill every background process this worker process started (its shutdown); how many were running."""
    with _table_lock:
        table = _table
    return table.kill_everything(because) if table is not None else 0
