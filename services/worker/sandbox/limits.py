"""Resource limits of one sandboxed command, and the environment it is given."""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass

from . import seccomp

# Names a command always sees; everything else of the services' environment stays outside.
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class Limits:
    """The TERMINAL_* bounds of a user's sandbox: per process (setrlimit, inherited by each child), per
    sandbox (memory and process count of the user's cgroup, /tmp), per workspace (quota, kept outputs)."""

    cpu_seconds: int = 300
    memory_mb: int = 4096
    max_processes: int = 256
    max_file_mb: int = 1024
    tmp_mb: int = 256
    quota_mb: int = 5120
    output_keep_mb: int = 8
    outputs_max_files: int = 50
    outputs_max_mb: int = 256

    @classmethod
    def from_settings(cls, settings) -> Limits:
        return cls(
            cpu_seconds=settings.terminal_cpu_seconds,
            memory_mb=settings.terminal_memory_mb,
            max_processes=settings.terminal_max_processes,
            max_file_mb=settings.terminal_max_file_mb,
            tmp_mb=settings.terminal_tmp_mb,
            quota_mb=settings.terminal_workspace_quota_mb,
            output_keep_mb=settings.terminal_output_keep_mb,
            outputs_max_files=settings.terminal_outputs_max_files,
            outputs_max_mb=settings.terminal_outputs_max_mb,
        )

    def preexec(self, *, nproc: bool, uid: int | None = None, room: int | None = None, group=None):
        """A preexec_fn: join the user's cgroup (as root), drop to `uid`, set CPU, address space, file size
        (at most `room`, the workspace's room left) and, when asked, process count; refuse fallocate."""
        file_bytes = self.max_file_mb * 1024 * 1024 if room is None else min(room, self.max_file_mb * 1024 * 1024)
        pairs = [
            # A soft CPU limit below the hard one: SIGXCPU first, so a shell can report it, then SIGKILL.
            (resource.RLIMIT_CPU, (self.cpu_seconds, self.cpu_seconds + 5)),
            (resource.RLIMIT_AS, (self.memory_mb * 1024 * 1024,) * 2),
            (resource.RLIMIT_FSIZE, (file_bytes,) * 2),
            (resource.RLIMIT_CORE, (0, 0)),
        ]
        if nproc:
            pairs.append((resource.RLIMIT_NPROC, (self.max_processes,) * 2))
        memory_bytes = self.memory_mb * 1024 * 1024
        no_fallocate = seccomp.no_fallocate()

        def apply() -> None:
            if group is not None:
                group.join(memory_bytes, self.max_processes)
            if uid is not None:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            for which, value in pairs:
                resource.setrlimit(which, value)
            no_fallocate()

        return apply


def clean_env(home: str, passthrough: tuple[str, ...] = (), source: dict[str, str] | None = None) -> dict[str, str]:
    """PATH, HOME, LANG and the operator's named variables; nothing else leaks in."""
    source = os.environ if source is None else source
    env = {"PATH": BASE_PATH, "HOME": home, "LANG": source.get("LANG") or "C.UTF-8", "TERM": "dumb"}
    for name in passthrough:
        if name in source and name not in env:
            env[name] = source[name]
    return env


def passthrough_names(raw: str) -> tuple[str, ...]:
    """TERMINAL_ENV_PASSTHROUGH's comma-separated names, blanks dropped."""
    return tuple(n.strip() for n in raw.split(",") if n.strip())
