"""One memory and process budget per user's sandbox: a cgroup holding every process of that user's commands.

RLIMIT_AS and RLIMIT_NPROC bound one process each; a cgroup bounds their sum, tmpfs pages included
(the kernel charges a tmpfs page to the cgroup of the process that wrote it). Each user's commands share
one group `hstack-sandbox-<hash of the workspace>` under the worker's own cgroup, so any limit put on the
worker still covers its sandboxes. The child joins the group before it execs bwrap (Limits.preexec), so no
process of the command ever runs outside it. cgroup v2 is used when the worker's own cgroup delegates the
memory and pids controllers to its children; else the v1 memory and pids hierarchies when mounted and
writable (as root). With neither, only the per-process limits remain, and the log says so once.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

PREFIX = "hstack-sandbox-"
EMPTY_WAIT_SECONDS = 1.0  # a killed sandbox's last processes exit just after bwrap itself
EMPTY_POLL_SECONDS = 0.02
JOIN_ATTEMPTS = 5  # another command of the user may remove the empty group between our mkdir and join
V1_FILES = {"memory": "memory.limit_in_bytes", "pids": "pids.max"}
V2_FILES = {"memory": "memory.max", "pids": "pids.max"}


@dataclass(frozen=True)
class Hierarchy:
    """Where groups are made: one parent folder per controller, and the file that sets each limit."""

    version: int
    parents: tuple[tuple[str, str], ...]  # (controller, folder of the worker's own cgroup)

    def files(self) -> dict[str, str]:
        return V2_FILES if self.version == 2 else V1_FILES


def _own_paths() -> dict[str, str]:
    """The worker's cgroup path per v1 controller, and under "" its v2 path (from /proc/self/cgroup)."""
    paths: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path
    return paths


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(mount root, mount point, fstype, super options) of every cgroup mount."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, right = line.split(" - ", 1)
        fields, (fstype, _source, options) = left.split(), right.split()[:3]
        if fstype in ("cgroup", "cgroup2"):
            found.append((fields[3], fields[4], fstype, set(options.split(","))))
    return found


def _folder(mount_root: str, mount_point: str, path: str) -> str | None:
    if not (path == mount_root or path.startswith(mount_root.rstrip("/") + "/")):
        return None
    return os.path.join(mount_point, path[len(mount_root):].lstrip("/"))


def _v2(own: dict[str, str], mounts) -> Hierarchy | None:
    for root, point, fstype, _ in mounts:
        if fstype != "cgroup2" or "" not in own:
            continue
        folder = _folder(root, point, own[""])
        try:
            enabled = Path(folder, "cgroup.subtree_control").read_text().split() if folder else []
        except OSError:
            continue
        if {"memory", "pids"} <= set(enabled) and os.access(folder, os.W_OK):
            return Hierarchy(2, (("memory", folder), ("pids", folder)))
    return None


def _v1(own: dict[str, str], mounts) -> Hierarchy | None:
    parents = []
    for controller in ("memory", "pids"):
        for root, point, fstype, options in mounts:
            folder = _folder(root, point, own.get(controller, "/")) if fstype == "cgroup" and controller in options else None
            if folder and os.access(folder, os.W_OK):
                parents.append((controller, folder))
                break
    return Hierarchy(1, tuple(parents)) if len(parents) == 2 else None


@functools.lru_cache(maxsize=1)
def hierarchy() -> Hierarchy | None:
    """The usable hierarchy, found once per process (None, logged once, when neither version is usable)."""
    try:
        own, mounts = _own_paths(), _mounts()
        found = _v2(own, mounts) or _v1(own, mounts)
        if found is not None and not _probe(found):
            found = None
    except OSError:
        found = None
    if found is None:
        log.warning("sandbox limits: no writable cgroup with the memory and pids controllers (cgroup v2 delegated "
                    "to the worker, or v1 as root); TERMINAL_MEMORY_MB and TERMINAL_MAX_PROCESSES apply per "
                    "process only, and /tmp is bounded by TERMINAL_TMP_MB")
    else:
        log.info("sandbox limits: one cgroup v%d per user for memory and processes", found.version)
    return found


def _probe(found: Hierarchy) -> bool:
    """Whether a group can be made, limited and removed here."""
    group = Group(found, f"{PREFIX}probe-{os.getpid()}")
    try:
        group.prepare(64 << 20, 16)
        return True
    except OSError:
        return False
    finally:
        group.remove()


@dataclass(frozen=True)
class Group:
    """One user's cgroup: the same name under each controller's parent folder."""

    where: Hierarchy
    name: str

    def folders(self) -> dict[str, list[str]]:
        """Each folder of the group and the controllers it limits (one folder for both on cgroup v2)."""
        out: dict[str, list[str]] = {}
        for controller, parent in self.where.parents:
            out.setdefault(os.path.join(parent, self.name), []).append(controller)
        return out

    def prepare(self, memory_bytes: int, max_processes: int) -> None:
        """Create the group and set its limits when it is new (a group in use keeps its own)."""
        values = {"memory": str(memory_bytes), "pids": str(max_processes)}
        files = self.where.files()
        for folder, controllers in self.folders().items():
            try:
                os.mkdir(folder, 0o755)
            except FileExistsError:
                continue
            for controller in controllers:
                _write(os.path.join(folder, files[controller]), values[controller])
            if "memory" in controllers:
                # Swap would let the group hold more than its limit; v1 counts memory+swap in memsw.
                swap = ("memory.swap.max", "0") if self.where.version == 2 else ("memory.memsw.limit_in_bytes", values["memory"])
                _write_if_present(os.path.join(folder, swap[0]), swap[1])

    def join(self, memory_bytes: int, max_processes: int) -> None:
        """Move the calling process into the group (run in the child, as root, before it execs)."""
        for attempt in range(JOIN_ATTEMPTS):
            try:
                self.prepare(memory_bytes, max_processes)
                for folder in self.folders():
                    _write(os.path.join(folder, "cgroup.procs"), str(os.getpid()))
                return
            except FileNotFoundError:
                if attempt == JOIN_ATTEMPTS - 1:
                    raise

    def remove(self) -> bool:
        """Remove the group when no process is left in it (a busy group stays); whether it is gone."""
        gone = True
        for folder in self.folders():
            try:
                os.rmdir(folder)
            except FileNotFoundError:
                pass
            except OSError as exc:
                gone = False
                if exc.errno != errno.EBUSY:
                    log.warning("sandbox limits: could not remove %s: %s", folder, exc)
        return gone


def _write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _write_if_present(path: str, value: str) -> None:
    try:
        _write(path, value)
    except OSError:
        pass  # no swap accounting on this kernel: memory.limit_in_bytes alone bounds RAM


def for_workspace(workspace: Path) -> Group | None:
    """The group of the user owning this workspace, or None when no cgroup is usable."""
    found = hierarchy()
    if found is None:
        return None
    digest = hashlib.sha256(str(Path(workspace).resolve()).encode()).hexdigest()[:16]
    return Group(found, PREFIX + digest)


_active: dict[str, int] = {}
_active_lock = threading.Lock()


def acquire(workspace: Path) -> Group | None:
    """The user's group, counted as in use by one more command of this worker process until `release`."""
    group = for_workspace(workspace)
    if group is not None:
        with _active_lock:
            _active[group.name] = _active.get(group.name, 0) + 1
    return group


def release(group: Group | None) -> None:
    """One command of the group ended: remove the group once none of ours is left in it."""
    if group is None:
        return
    with _active_lock:
        left = _active.get(group.name, 1) - 1
        if left > 0:
            _active[group.name] = left
            return
        _active.pop(group.name, None)
    deadline = time.monotonic() + EMPTY_WAIT_SECONDS
    while not group.remove() and time.monotonic() < deadline:
        time.sleep(EMPTY_POLL_SECONDS)
