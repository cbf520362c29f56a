"""The terminal sandbox: one user's command reaches neither another user, nor the server's secrets,
nor the machine (limits), and its output, exit code and timeout are reported faithfully.

Every payload is harmless and bounded: the "fork bomb" forks at most 400 sleepers, the "memory hog"
asks for 512 MB once. Under bwrap they run in a private PID namespace torn down when the command ends.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import psutil
import pytest

from services.worker.sandbox import (Limits, ProcessNotFound, ProcessTable, Sandbox, SandboxUnavailable,
                                     TooManyProcesses, check, run, unsandboxed_refusal)
from services.worker.sandbox import launcher, stage
from tests.support.waiting import wait_until

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

HAVE_BWRAP = shutil.which("bwrap") is not None
needs_bwrap = pytest.mark.skipif(not HAVE_BWRAP and not os.environ.get("CI"), reason="apt-get install bubblewrap")
SECRET = "hstack-test-secret-7f3a9c"
FORK_BOMB = r"""python3 -c '
import os, sys
n = 0
try:
    for _ in range(400):
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", "30"])
        n += 1
except OSError as exc:
    print("fork refused after", n, exc.errno)
    sys.exit(0)
print("forked", n)
'"""


@pytest.fixture(params=[0o711, 0o700], ids=["searchable parent", "0700 parent"])
def tree(request):
    """A fake DATA_DIR: two users, the SQLite file and a .env beside it, under a parent searchable by
    everyone (0711) or by its owner only (0700, as root's home folder is on a root install)."""
    base = Path(tempfile.mkdtemp(prefix="hstack-sandbox-"))
    base.chmod(request.param)
    data = base / "data"
    a, b = data / "users" / "alice" / "workspace", data / "users" / "bob"
    a.mkdir(parents=True)
    (b / "workspace").mkdir(parents=True)
    (b / "memories").mkdir()
    (b / "memories" / "MEMORY.md").write_text(f"bob's memory {SECRET}\n")
    (data / "hstack.db").write_text(f"SQLite format 3 {SECRET}\n")
    (data / ".env").write_text(f"ADMIN_API_KEY={SECRET}\n")
    yield {"data": data, "a": a, "b": b}
    shutil.rmtree(base, ignore_errors=True)


def sandbox(tree, **limits) -> Sandbox:
    return Sandbox(limits=Limits(**limits) if limits else Limits(), hidden=(str(tree["data"]),))


@pytest.fixture(autouse=True)
def bwrap_in_ci():
    """In CI a missing bwrap is a failure, not a skip (.ci/run installs it)."""
    if os.environ.get("CI") and not HAVE_BWRAP:
        pytest.fail("bwrap is missing in CI: .ci/run must apt-get install bubblewrap")


@needs_bwrap
def test_user_a_cannot_read_user_b_the_database_or_dotenv(tree):
    """Reproduction: user A's command names B's memory file, the SQLite file and .env by absolute and
    relative path; none of it exists inside A's sandbox."""
    data = tree["data"]
    targets = [tree["b"] / "memories" / "MEMORY.md", data / "hstack.db", data / ".env",
               Path("../../bob/memories/MEMORY.md"), Path("../../../hstack.db"), Path("/work"), Path(".env")]
    script = "; ".join(f"cat '{t}' 2>&1 || ls '{t}' 2>&1" for t in targets)
    result = run(script, workspace=tree["a"], timeout=30, sandbox=sandbox(tree))
    assert SECRET not in result.output
    assert result.output.count("No such file or directory") >= len(targets)


@needs_bwrap
def test_the_services_environment_stays_outside(tree, monkeypatch):
    """Reproduction: a secret in the worker's environment, read with `env` and /proc/*/environ."""
    monkeypatch.setenv("HSTACK_LEAK_PROBE", SECRET)
    cmd = f"env; cat /proc/1/environ; cat /proc/self/environ; cat /proc/{os.getpid()}/environ; echo"
    result = run(cmd, workspace=tree["a"], timeout=30, sandbox=sandbox(tree))
    assert SECRET not in result.output
    names = {line.split("=", 1)[0] for line in result.output.splitlines() if "=" in line and " " not in line.split("=")[0]}
    assert {"PATH", "HOME", "LANG"} <= names
    assert "HOME=/workspace" in result.output


@needs_bwrap
def test_passthrough_names_are_the_only_extra_variables(tree, monkeypatch):
    monkeypatch.setenv("HSTACK_PASSED", "visible-value")
    monkeypatch.setenv("HSTACK_LEAK_PROBE", SECRET)
    box = Sandbox(env_passthrough=("HSTACK_PASSED",), hidden=(str(tree["data"]),))
    result = run("env", workspace=tree["a"], timeout=30, sandbox=box)
    assert "HSTACK_PASSED=visible-value" in result.output and SECRET not in result.output


@needs_bwrap
def test_writes_outside_the_workspace_fail(tree):
    """Reproduction: writing to /, /etc, /usr and B's workspace from A's sandbox."""
    b_file = tree["b"] / "workspace" / "pwned"
    targets = ["/hstack-probe", "/etc/hstack-probe", "/usr/hstack-probe", str(b_file), "../../bob/workspace/pwned"]
    script = "; ".join(f"echo x > '{t}' && echo WROTE {t}" for t in targets) + "; echo ok > mine.txt"
    result = run(script, workspace=tree["a"], timeout=30, sandbox=sandbox(tree))
    assert "WROTE" not in result.output
    assert not b_file.exists() and not Path("/hstack-probe").exists() and not Path("/etc/hstack-probe").exists()
    assert (tree["a"] / "mine.txt").read_text() == "ok\n"


@needs_bwrap
def test_a_fork_bomb_is_contained_by_the_process_limit(tree):
    """Reproduction: a loop that forks until the kernel refuses, under a limit of 20 processes.
    As root the limit needs the command to run as an unprivileged uid inside its own user namespace."""
    result = run(FORK_BOMB, workspace=tree["a"], timeout=60, sandbox=sandbox(tree, max_processes=20))
    assert "fork refused after" in result.output, result.output
    forked = int(result.output.split("fork refused after")[1].split()[0])
    assert forked < 20
    assert run("echo alive", workspace=tree["a"], timeout=30, sandbox=sandbox(tree)).output == "alive\n"


@needs_bwrap
def test_a_memory_hog_is_contained_by_the_address_space_limit(tree):
    """Reproduction: one 512 MB allocation under a 128 MB address-space limit."""
    cmd = "python3 -c 'b = bytearray(512 * 1024 * 1024); print(\"allocated\")'"
    result = run(cmd, workspace=tree["a"], timeout=60, sandbox=sandbox(tree, memory_mb=128))
    assert "MemoryError" in result.output and "allocated" not in result.output
    assert result.exit_code != 0


@needs_bwrap
def test_a_timeout_kills_the_whole_group(tree):
    marker = "1000.4242"
    result = run(f"echo begun; sleep {marker} & sleep {marker}", workspace=tree["a"], timeout=1, sandbox=sandbox(tree))
    assert result.timed_out and "begun" in result.output
    assert "timed out" in result.text(1)

    def sleepers():
        return [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] and marker in p.info["cmdline"]]

    wait_until(lambda: not sleepers(), timeout=10, what="the sandboxed sleeps to be gone")


@needs_bwrap
def test_huge_output_keeps_head_and_tail_and_stores_the_whole(tree):
    cmd = "echo FIRST-LINE; yes 0123456789 | head -c 300000; echo; echo LAST-LINE; exit 3"
    result = run(cmd, workspace=tree["a"], timeout=60, sandbox=sandbox(tree))
    assert result.truncated and result.exit_code == 3
    assert result.output.startswith("FIRST-LINE") and result.output.rstrip().endswith("LAST-LINE")
    assert len(result.output) < 51_000 and result.full_output_path in result.output
    stored = (tree["a"] / result.full_output_path).read_text()
    assert stored.startswith("FIRST-LINE") and stored.rstrip().endswith("LAST-LINE") and len(stored) > 300_000


@needs_bwrap
def test_a_planted_symlink_does_not_redirect_the_output_file(tree, tmp_path):
    """Reproduction: the user points .hstack at a folder outside the workspace, then prints a lot;
    the worker (root here) must not write through the link."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (tree["a"] / ".hstack").symlink_to(outside)
    with pytest.raises(OSError):
        run("yes | head -c 120000", workspace=tree["a"], timeout=30, sandbox=sandbox(tree))
    assert list(outside.iterdir()) == []


def test_the_plain_mode_scrubs_the_environment_too(tree, monkeypatch):
    monkeypatch.setenv("HSTACK_LEAK_PROBE", SECRET)
    result = run("env; echo x > made.txt; exit 4", workspace=tree["a"], timeout=30, sandbox=Sandbox(kind="none"))
    assert SECRET not in result.output and "PATH=" in result.output and result.exit_code == 4
    assert (tree["a"] / "made.txt").exists()


def test_plain_mode_is_refused_with_more_than_one_user():
    assert unsandboxed_refusal("none", 1) is None and unsandboxed_refusal("bwrap", 5) is None
    assert "TERMINAL_SANDBOX=none" in unsandboxed_refusal("none", 2)


def test_a_missing_bwrap_names_the_fix_and_never_falls_back(tree, monkeypatch):
    monkeypatch.setattr(launcher.shutil, "which", lambda *a, **k: None)
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        run("touch ran.txt", workspace=tree["a"], timeout=30, sandbox=Sandbox())
    assert not (tree["a"] / "ran.txt").exists()


def test_refused_namespaces_name_the_fix(monkeypatch):
    folder = Path(tempfile.mkdtemp(prefix="hstack-fake-bwrap-"))
    folder.chmod(0o755)  # run as the sandbox uid when we are root
    fake = folder / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(launcher, "bwrap_path", lambda: str(fake))
    launcher._probe.cache_clear()
    with pytest.raises(SandboxUnavailable, match="seccomp=unconfined") as err:
        check(Sandbox(network=False, sandbox_uid=os.geteuid() or 65534))
    assert "No permissions" in err.value.message
    launcher._probe.cache_clear()
    shutil.rmtree(folder)


@needs_bwrap
def test_background_processes_belong_to_their_user(tree):
    table = ProcessTable(max_per_user=2, lifetime_seconds=3600)
    box = sandbox(tree)
    started = table.start("alice", "s1", "echo hello-bg; sleep 1000", workspace=tree["a"], sandbox=box)
    pid = started["session_id"]
    assert pid.startswith("proc_") and started["status"] == "running"
    wait_until(lambda: "hello-bg" in table.log("alice", pid)["output"], timeout=15, what="the first output")
    assert [p["session_id"] for p in table.list("alice")] == [pid] and table.list("bob") == []
    for action in (table.poll, table.log, table.kill):
        with pytest.raises(ProcessNotFound):
            action("bob", pid)
    table.start("alice", "s2", "sleep 1000", workspace=tree["a"], sandbox=box)
    with pytest.raises(TooManyProcesses):
        table.start("alice", "s2", "sleep 1000", workspace=tree["a"], sandbox=box)
    assert table.kill("alice", pid)["status"] == "killed"
    assert table.kill_all("alice", session_id="s2") == 1
    done = table.start("alice", "s3", "echo finished; exit 5", workspace=tree["a"], sandbox=box)
    waited = table.wait("alice", done["session_id"], timeout=30)
    assert waited["status"] == "exited" and waited["exit_code"] == 5 and "finished" in waited["output_tail"]


@needs_bwrap
def test_background_processes_die_after_their_lifetime(tree):
    now = [1000.0]
    table = ProcessTable(max_per_user=4, lifetime_seconds=60, clock=lambda: now[0])
    pid = table.start("alice", None, "sleep 1000", workspace=tree["a"], sandbox=sandbox(tree))["session_id"]
    assert table.reap() == 0
    now[0] += 61
    assert table.reap() == 1
    view = table.poll("alice", pid)
    assert view["status"] == "killed" and "LIFETIME" in view["killed_because"]


@needs_bwrap
def test_a_closed_data_dir_is_reached_without_loosening_it_or_leaving_a_mount(tree):
    """Reproduction: with DATA_DIR under a 0700 folder (root's home), a root worker's every command failed:
    "a parent folder of DATA_DIR/users/<id>/workspace is not searchable by TERMINAL_SANDBOX_UID (65534)"."""
    mode = tree["data"].parent.stat().st_mode & 0o777

    result = run("echo made > made.txt; ls", workspace=tree["a"], timeout=30, sandbox=sandbox(tree))

    assert result.exit_code == 0 and "made.txt" in result.output
    assert (tree["a"] / "made.txt").stat().st_uid == (Sandbox().sandbox_uid if os.geteuid() == 0 else os.geteuid())
    assert tree["data"].parent.stat().st_mode & 0o777 == mode
    assert str(stage.STAGE) not in Path("/proc/self/mountinfo").read_text()
    assert not stage.STAGE.exists() or list(stage.STAGE.iterdir()) == []
