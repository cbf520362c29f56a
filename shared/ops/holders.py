"""Who holds a lease: a process named so that a process on the same host can tell, at once, that it is dead.

A holder id is `<service>@<hostname>:<pid>:<pid namespace>:<start>`. The pid alone is not enough: a restarted
worker (or any process) may be given the dead one's pid, so `start` is the process's start time in clock ticks
since boot (/proc/<pid>/stat, field 22), which a reused pid does not repeat. The pid namespace says whether this
process sees the holder's pids at all: two containers may share a hostname but never a pid namespace, so a
holder in another namespace (or on another host) is never judged from here, and its lease is left to lapse.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

PROC = Path("/proc")


@dataclass(frozen=True)
class Holder:
    service: str
    host: str
    pid: int
    namespace: str
    start: str

    def __str__(self) -> str:
        return f"{self.service}@{self.host}:{self.pid}:{self.namespace}:{self.start}"


def holder_id(service: str) -> str:
    """This process's holder id."""
    return str(Holder(service, socket.gethostname(), os.getpid(), pid_namespace(), start_of(os.getpid()) or "0"))


def parse(value: str | None) -> Holder | None:
    """A holder id back into its parts; None for anything else (older ids held only `service@host:pid`)."""
    service, at, rest = (value or "").partition("@")
    parts = rest.rsplit(":", 3)
    if not at or len(parts) != 4 or not parts[1].isdigit():
        return None
    host, pid, namespace, start = parts
    return Holder(service, host, int(pid), namespace, start)


def local_prefix() -> str:
    """What every holder id on this host contains (`@<hostname>:`), for narrowing a query before `dead_here`."""
    return f"@{socket.gethostname()}:"


def dead_here(value: str | None) -> bool:
    """True only when the holder ran in this host's pid namespace and that process is gone (or a zombie, or
    its pid now belongs to a process that started at another time). Anything unsure is False: alive."""
    holder = parse(value)
    if holder is None or holder.host != socket.gethostname() or holder.namespace != pid_namespace():
        return False
    if holder.namespace == "?":  # no /proc: only whether the pid exists is known
        return not exists(holder.pid)
    return start_of(holder.pid) != holder.start


@lru_cache(maxsize=1)
def pid_namespace() -> str:
    """This process's pid namespace (`4026531836`), or `?` where /proc does not say."""
    try:
        link = os.readlink(PROC / "self" / "ns" / "pid")
    except OSError:
        return "?"
    return link.partition("[")[2].rstrip("]") or "?"


def start_of(pid: int) -> str | None:
    """The start time of a live process `pid` in ticks since boot; None when it is gone or a zombie."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # the command name may hold spaces and parentheses
    if len(fields) < 20 or fields[0] in {"Z", "X"}:
        return None
    return fields[19]


def exists(number: int, send: Callable[[int, int], None] = os.kill) -> bool:
    """Whether a process of that number exists (a process group, with `send=os.killpg`); one this process may not
    signal exists too."""
    try:
        send(number, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
