"""Starting one command under bubblewrap (or, on a single-user box, as a plain subprocess).

Why the process limit needs care: the kernel counts RLIMIT_NPROC per real uid and ignores it for
root. So (1) when the worker runs as root the command runs as TERMINAL_SANDBOX_UID instead, and
(2) under bwrap the limit is set by a `ulimit -u` inside the sandbox's own user namespace, where
the count covers only that sandbox's processes (set before bwrap it would also count the worker's
own threads and every other sandbox of the same uid).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from shared.errors import Unavailable

from . import quota
from .cgroup import Group
from .limits import Limits, clean_env
from .stage import STAGE, hand_over, reachable, stage_ready, staged

MOUNT_POINT = "/workspace"
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# Files of /etc a command has no business reading, masked even though /etc is read-only.
ETC_SECRETS = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers")
ETC_SECRET_DIRS = ("/etc/ssl/private", "/etc/sudoers.d")
REPO_ROOT = Path(__file__).resolve().parents[3]
INSTALL_BWRAP = "apt-get install bubblewrap (the Docker image installs it)"


class SandboxUnavailable(Unavailable):
    """The terminal sandbox cannot start on this machine."""

    code = "sandbox_unavailable"


@dataclass(frozen=True)
class Sandbox:
    """How commands run: the settings of TERMINAL_* in one value."""

    kind: str = "bwrap"
    limits: Limits = field(default_factory=Limits)
    env_passthrough: tuple[str, ...] = ()
    network: bool = True
    sandbox_uid: int = 65534
    hidden: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, settings) -> Sandbox:
        from .limits import passthrough_names

        return cls(
            kind=settings.terminal_sandbox,
            limits=Limits.from_settings(settings),
            env_passthrough=passthrough_names(settings.terminal_env_passthrough),
            network=settings.terminal_network,
            sandbox_uid=settings.terminal_sandbox_uid,
            hidden=(str(Path(settings.data_dir).resolve()),),
        )


def run_as(sandbox: Sandbox) -> int | None:
    """The uid a command runs as, when it must differ from ours (only when we are root)."""
    return sandbox.sandbox_uid if os.geteuid() == 0 else None


def _unreachable(uid: int) -> SandboxUnavailable:
    return SandboxUnavailable(
        "the terminal sandbox cannot reach the workspace: a parent folder of DATA_DIR/users/<id>/workspace is not "
        f"searchable by TERMINAL_SANDBOX_UID ({uid}), and this worker cannot give bwrap the workspace through a mount "
        f"namespace of its own (it needs CAP_SYS_ADMIN and a root-owned {STAGE}); chmod o+x that folder instead")


def bwrap_path() -> str:
    """The bwrap binary, or a SandboxUnavailable naming the fix."""
    found = shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin:" + os.environ.get("PATH", ""))
    if not found:
        raise SandboxUnavailable(f"the terminal sandbox needs bubblewrap (bwrap), which is not installed: {INSTALL_BWRAP}")
    return found


def _system_binds() -> list[str]:
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in ETC_SECRETS:
        if os.path.isfile(path):
            args += ["--ro-bind", "/dev/null", path]
    for path in ETC_SECRET_DIRS:
        if os.path.isdir(path):
            args += ["--tmpfs", path]
    return args


def _masks(hidden: tuple[str, ...]) -> list[str]:
    """Hide the data folder and the repository when they lie inside a bound system folder."""
    args: list[str] = []
    for path in (*hidden, str(REPO_ROOT)):
        real = os.path.realpath(path)
        if any(real == d or real.startswith(d + "/") for d in SYSTEM_DIRS) and os.path.isdir(real):
            args += ["--tmpfs", real]
    return args


def bwrap_argv(sandbox: Sandbox, workspace_fd: int, command: str, workdir: str = "") -> list[str]:
    """The full bwrap command line running `bash -c command` in the user's workspace (`workdir` inside it)."""
    tmp_bytes = sandbox.limits.tmp_mb * 1024 * 1024
    argv = [bwrap_path(), "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--hostname", "sandbox"]
    if not sandbox.network:
        argv.append("--unshare-net")
    argv += _system_binds()
    # /tmp and /dev/shm are RAM: each is bounded by TERMINAL_TMP_MB and charged to the user's cgroup;
    # /dev itself (an unbounded tmpfs) is read-only, its device nodes still usable.
    argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(tmp_bytes), "--tmpfs", "/tmp"]
    argv += ["--size", str(tmp_bytes), "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
    argv += _masks(sandbox.hidden)
    argv += ["--bind-fd", str(workspace_fd), MOUNT_POINT, "--remount-ro", "/", "--chdir", in_mount(workdir)]
    # The process limit is set inside the new user namespace, so it counts this sandbox only.
    prologue = f'ulimit -u {sandbox.limits.max_processes} || exit 126; exec /bin/bash -c "$1"'
    return argv + ["--", "/bin/bash", "-c", prologue, "sandbox", command]


def in_mount(workdir: str) -> str:
    """Where a workspace-relative folder appears inside the sandbox."""
    return MOUNT_POINT + ("/" + workdir.strip("/") if workdir.strip("/") else "")


@functools.lru_cache(maxsize=8)
def _probe(sandbox: Sandbox, uid: int | None) -> str | None:
    """None when bwrap starts with these options; else what it said."""
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    try:
        argv = bwrap_argv(sandbox, fd, "true")
        proc = subprocess.run(argv, env=clean_env(MOUNT_POINT), pass_fds=(fd,), capture_output=True,
                              timeout=30, user=uid, group=uid, extra_groups=[] if uid is not None else None)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    finally:
        os.close(fd)
    return None if proc.returncode == 0 else (proc.stderr or proc.stdout).decode(errors="replace").strip()[:300]


def check(sandbox: Sandbox) -> None:
    """Raise SandboxUnavailable, naming the fix, when bwrap is selected but cannot start."""
    if sandbox.kind != "bwrap":
        return
    bwrap_path()
    problem = _probe(sandbox, run_as(sandbox))
    if problem is not None:
        _probe.cache_clear()
        raise SandboxUnavailable(
            f"bubblewrap could not create the sandbox ({problem}). It needs user namespaces: on the host "
            "sysctl kernel.unprivileged_userns_clone=1; in a container the worker also needs "
            "security_opt seccomp=unconfined and apparmor=unconfined (docker-compose.yml).")


def launch(command: str, *, workspace: Path, sandbox: Sandbox, stdout, stderr=subprocess.STDOUT,
           workdir: str = "", group: Group | None = None) -> subprocess.Popen:
    """Start the command in its own process group, in `workdir` (workspace-relative, already checked),
    inside the user's cgroup `group` (from cgroup.acquire) when there is one."""
    workspace = Path(workspace)
    uid = run_as(sandbox)
    if uid is not None:
        hand_over(workspace, uid)
    room = quota.room_left(workspace, sandbox.limits.quota_mb)
    common = dict(stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, start_new_session=True)
    if sandbox.kind == "none":
        env = clean_env(str(workspace), sandbox.env_passthrough)
        # Without a user namespace the count would include the worker's own threads; only a
        # dropped uid (root worker) makes the limit both effective and harmless.
        preexec = sandbox.limits.preexec(nproc=uid is not None, uid=uid, room=room, group=group)
        return subprocess.Popen(["/bin/bash", "-c", command], cwd=workspace / workdir, env=env, preexec_fn=preexec, **common)
    check(sandbox)
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    try:
        argv = bwrap_argv(sandbox, fd, command, workdir)
        env = clean_env(MOUNT_POINT, sandbox.env_passthrough)
        if uid is None or reachable(workspace, uid):
            return subprocess.Popen(argv, env=env, pass_fds=(fd,), **common,
                                    preexec_fn=sandbox.limits.preexec(nproc=False, uid=uid, room=room, group=group))
        # The staged start drops to the uid itself, after its mount: the limits' part runs as root before it.
        preexec = sandbox.limits.preexec(nproc=False, room=room, group=group)
        return _launch_staged(argv, workspace, fd, uid, preexec, env, common)
    finally:
        os.close(fd)


def _launch_staged(argv: list[str], workspace: Path, fd: int, uid: int, preexec, env: dict,
                   common: dict) -> subprocess.Popen:
    """bwrap started through a mount namespace of its own (stage.py): the workspace's folders are closed to `uid`."""
    if not stage_ready(uid):
        raise _unreachable(uid)
    try:
        return subprocess.Popen(argv, env=env, pass_fds=(fd,), preexec_fn=staged(workspace, fd, uid, preexec),
                                **common)
    except subprocess.SubprocessError:  # the namespace or the mount was refused
        raise _unreachable(uid) from None
