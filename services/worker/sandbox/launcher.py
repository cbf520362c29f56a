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

from . import egress, quota
from .cgroup import Group
from .limits import Limits, clean_env
from .reach import Reach
from .stage import STAGE, hand_over, reachable, stage_ready, staged

MOUNT_POINT = "/workspace"
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# Files of /etc a command has no business reading, masked even though /etc is read-only.
ETC_SECRETS = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers")
ETC_SECRET_DIRS = ("/etc/ssl/private", "/etc/sudoers.d")
REPO_ROOT = Path(__file__).resolve().parents[3]
INSTALL_BWRAP = "apt-get install bubblewrap (the Docker image installs it)"
FORWARDER = Path(__file__).with_name("forwarder.py")
INSIDE_FORWARDER = "/run/hstack/forwarder.py"
PROXY_NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
               "NO_PROXY", "no_proxy")


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
    reach: Reach = field(default_factory=Reach)
    max_connections: int = 32

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
            reach=Reach.from_settings(settings),
            max_connections=settings.terminal_network_max_connections,
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


class Handed:
    """Descriptors handed to bwrap (the workspace, data it copies in, its own options); closed once it started."""

    def __init__(self) -> None:
        self.fds: list[int] = []

    def add(self, fd: int) -> int:
        self.fds.append(fd)
        return fd

    def data(self, content: bytes) -> int:
        """A descriptor bwrap reads `content` from."""
        fd = self.add(os.memfd_create("bwrap-data", os.MFD_CLOEXEC))
        os.write(fd, content)
        os.lseek(fd, 0, os.SEEK_SET)
        return fd

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()


def bwrap_argv(sandbox: Sandbox, handed: Handed, workspace_fd: int, command: str, workdir: str = "",
               door: str | None = None, room: int | None = None) -> list[str]:
    """bwrap running `bash -c command` in the user's workspace (`workdir` inside it), its options read from a
    descriptor so no host path shows in the sandbox's /proc/1/cmdline. With a door (egress.py's socket) the
    forwarder starts first and is the command's only way out; without one, only the sandbox's own loopback."""
    tmp_bytes = sandbox.limits.tmp_mb * 1024 * 1024
    options = ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
               "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--hostname", "sandbox"]
    options += _system_binds()
    # The kernel's command line names the host's boot disk and options: the sandbox reads it empty.
    options += ["--proc", "/proc", "--ro-bind-data", str(handed.data(b"")), "/proc/cmdline"]
    # /tmp and /dev/shm are RAM: each is bounded by TERMINAL_TMP_MB and charged to the user's cgroup;
    # /dev itself (an unbounded tmpfs) is read-only, its device nodes still usable.
    options += ["--dev", "/dev", "--size", str(tmp_bytes), "--tmpfs", "/tmp"]
    options += ["--size", str(tmp_bytes), "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
    options += _masks(sandbox.hidden)
    options += ["--bind-fd", str(workspace_fd), MOUNT_POINT]
    # The process limit is set inside the new user namespace, so it counts this sandbox only.
    prologue = f"ulimit -u {sandbox.limits.max_processes} || exit 126; "
    if room is not None:
        # The workspace's room left caps each file the command writes. Set here, not before bwrap, which
        # itself writes the data it copies in (the forwarder) and must not meet a full quota's zero.
        prologue += f"ulimit -f {min(room, sandbox.limits.max_file_mb * 1024 * 1024) // 1024} || exit 126; "
    if door is not None:
        options += ["--bind", door, egress.INSIDE_SOCKET,
                    "--ro-bind-data", str(handed.data(FORWARDER.read_bytes())), INSIDE_FORWARDER]
        prologue += (f"python3 -I -S {INSIDE_FORWARDER} {egress.INSIDE_PORT} {egress.INSIDE_SOCKET} || "
                     "{ echo 'the sandbox network could not start: its forwarder needs python3 in the sandbox "
                     "(and memory to start it); set TERMINAL_NETWORK=false to run without a network' >&2; "
                     "exit 126; }; ")
    options += ["--remount-ro", "/", "--chdir", in_mount(workdir)]
    args_fd = handed.data(b"".join(o.encode() + b"\0" for o in options))
    return [bwrap_path(), "--args", str(args_fd), "--", "/bin/bash", "-c", prologue + 'exec /bin/bash -c "$1"',
            "sandbox", command]


def sandbox_env(sandbox: Sandbox, proxied: bool) -> dict[str, str]:
    """The command's environment: the clean one, plus the proxy variables when it has a way out."""
    env = {k: v for k, v in clean_env(MOUNT_POINT, sandbox.env_passthrough).items() if k not in PROXY_NAMES}
    if proxied:
        url = f"http://127.0.0.1:{egress.INSIDE_PORT}"
        env.update({name: url for name in PROXY_NAMES[:6]})
        # The sandbox's own loopback (a server the command started) is reached directly.
        env.update(NO_PROXY="localhost,127.0.0.1,::1", no_proxy="localhost,127.0.0.1,::1")
    return env


def in_mount(workdir: str) -> str:
    """Where a workspace-relative folder appears inside the sandbox."""
    return MOUNT_POINT + ("/" + workdir.strip("/") if workdir.strip("/") else "")


@functools.lru_cache(maxsize=8)
def _probe(sandbox: Sandbox, uid: int | None) -> str | None:
    """None when bwrap starts with these options; else what it said."""
    handed = Handed()
    try:
        fd = handed.add(os.open("/", os.O_RDONLY | os.O_DIRECTORY))
        argv = bwrap_argv(sandbox, handed, fd, "true")
        proc = subprocess.run(argv, env=clean_env(MOUNT_POINT), pass_fds=handed.fds, capture_output=True,
                              timeout=30, user=uid, group=uid, extra_groups=[] if uid is not None else None)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    finally:
        handed.close()
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
           workdir: str = "", group: Group | None = None, stdin=subprocess.DEVNULL) -> subprocess.Popen:
    """Start the command in its own process group, in `workdir` (workspace-relative, already checked),
    inside the user's cgroup `group` (from cgroup.acquire) when there is one. `stdin` is a pipe only for a
    process spoken to (an MCP server); a command has none."""
    workspace = Path(workspace)
    uid = run_as(sandbox)
    if uid is not None:
        hand_over(workspace, uid)
    room = quota.room_left(workspace, sandbox.limits.quota_mb)
    common = dict(stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True)
    if sandbox.kind == "none":
        env = clean_env(str(workspace), sandbox.env_passthrough)
        # Without a user namespace the count would include the worker's own threads; only a
        # dropped uid (root worker) makes the limit both effective and harmless.
        preexec = sandbox.limits.preexec(nproc=uid is not None, uid=uid, room=room, group=group)
        return subprocess.Popen(["/bin/bash", "-c", command], cwd=workspace / workdir, env=env, preexec_fn=preexec, **common)
    check(sandbox)
    door = _open_door(sandbox, uid, label=f"user {workspace.parent.name}")
    handed = Handed()
    try:
        fd = handed.add(os.open(workspace, os.O_RDONLY | os.O_DIRECTORY))
        argv = bwrap_argv(sandbox, handed, fd, command, workdir, door.path if door else None, room)
        env = sandbox_env(sandbox, door is not None)
        if uid is None or reachable(workspace, uid):
            proc = subprocess.Popen(argv, env=env, pass_fds=handed.fds, **common,
                                    preexec_fn=sandbox.limits.preexec(nproc=False, uid=uid, group=group))
        else:
            # The staged start drops to the uid itself, after its mount: the limits' part runs as root before it.
            preexec = sandbox.limits.preexec(nproc=False, group=group)
            proc = _launch_staged(argv, workspace, fd, uid, preexec, env, common, handed.fds)
    except BaseException:
        if door is not None:
            door.close()
        raise
    finally:
        handed.close()
    if door is not None:
        door.close_when_done(proc)
    return proc


def _launch_staged(argv: list[str], workspace: Path, fd: int, uid: int, preexec, env: dict,
                   common: dict, fds: list[int]) -> subprocess.Popen:
    """bwrap started through a mount namespace of its own (stage.py): the workspace's folders are closed to `uid`."""
    if not stage_ready(uid):
        raise _unreachable(uid)
    try:
        return subprocess.Popen(argv, env=env, pass_fds=fds, preexec_fn=staged(workspace, fd, uid, preexec),
                                **common)
    except subprocess.SubprocessError:  # the namespace or the mount was refused
        raise _unreachable(uid) from None


def _open_door(sandbox: Sandbox, uid: int | None, label: str) -> egress.Door | None:
    """The command's own egress socket when TERMINAL_NETWORK is on; None leaves it loopback only."""
    if not sandbox.network:
        return None
    return egress.egress_proxy().open_door(sandbox.reach, uid=uid, label=label,
                                           max_connections=sandbox.max_connections)
