"""Limits per sandbox, not per process: one memory and process budget per user's commands (a cgroup),
a bounded /tmp and /dev/shm, a workspace quota the terminal and the file tools keep, and kept outputs
that are capped and rotated.

Every payload is small: 150 MB processes against a 256 MB limit, a 20 MB quota, outputs of a few MB.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from services.worker.sandbox import Limits, ProcessTable, Sandbox, cgroup, quota, run
from services.worker.sandbox.output import OUTPUTS_DIR
from services.worker.tools import files, terminal
from services.worker.tools.registry import ToolContext
from tests.services.worker.terminal_turns import needs_bwrap, searchable_data_dir
from tests.support.waiting import wait_until

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

MB = 1024 * 1024
needs_cgroup = pytest.mark.skipif(
    cgroup.hierarchy() is None,
    reason="no writable cgroup with the memory and pids controllers here (cgroup v2 delegated to this "
           "process, or v1 as root): the aggregate limit cannot be made, only the per-process RLIMITs apply")
HOLD = r"""python3 -c '
import os, time
block = bytearray(150 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
open("held-%d" % os.getpid(), "w").close()
print("held", flush=True)
deadline = time.monotonic() + 5
while len([n for n in os.listdir(".") if n.startswith("held-")]) < 3 and time.monotonic() < deadline:
    time.sleep(0.05)
'"""


@pytest.fixture
def workspace():
    data = searchable_data_dir()
    path = data / "users" / "alice" / "workspace"
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(data.parent, ignore_errors=True)


def box(**limits) -> Sandbox:
    return Sandbox(limits=Limits(**limits))


def kept_outputs(workspace: Path) -> list[Path]:
    folder = workspace.joinpath(*OUTPUTS_DIR)
    return sorted(folder.iterdir(), key=lambda p: p.stat().st_mtime_ns) if folder.exists() else []


@needs_bwrap
@needs_cgroup
def test_three_processes_cannot_each_hold_the_whole_memory_limit(workspace):
    """Reproduction: three 1.5 GB processes ran at once in one sandbox against TERMINAL_MEMORY_MB=4096
    (RLIMIT_AS is per process). Here: three 150 MB processes against 256 MB must not all hold."""
    result = run(f"({HOLD}) & ({HOLD}) & ({HOLD}) & wait", workspace=workspace, timeout=60,
                 sandbox=box(memory_mb=256))

    assert not result.timed_out
    assert 1 <= result.output.splitlines().count("held") < 3, result.output
    assert cgroup.for_workspace(workspace).remove()  # the command's group was removed after it


@needs_bwrap
@needs_cgroup
def test_what_tmp_holds_counts_in_the_memory_limit(workspace):
    """Reproduction: /tmp was RAM beside the memory limit. With 256 MB of memory, 150 MB held in /tmp
    leaves no room for a process of 150 MB."""
    result = run("head -c 150M /dev/zero > /tmp/fill && echo filled; python3 -c 'b = bytearray(150 << 20)\n"
                 "for i in range(0, len(b), 4096): b[i] = 1\nprint(\"held\")'; echo rc=$?",
                 workspace=workspace, timeout=60, sandbox=box(memory_mb=256, tmp_mb=200))

    assert "filled" in result.output and "held" not in result.output.splitlines(), result.output
    assert "rc=137" in result.output


@needs_bwrap
@needs_cgroup
def test_the_process_count_is_one_budget_for_all_of_a_users_commands(workspace):
    """Reproduction: each command got its own 256 processes. A background command holding 30 of a
    50-process budget leaves a foreground command fewer than 30 more."""
    table = ProcessTable(max_per_user=2, lifetime_seconds=3600)
    sandbox = box(max_processes=50)
    started = table.start("alice", None, "for i in $(seq 30); do sleep 1000 & done; echo spawned; wait",
                          workspace=workspace, sandbox=sandbox)
    try:
        wait_until(lambda: "spawned" in table.log("alice", started["session_id"])["output"], timeout=30,
                   what="the background command's 30 sleepers")
        result = run("n=0; for i in $(seq 30); do sleep 1000 & n=$((n+1)); done; echo started $n",
                     workspace=workspace, timeout=60, sandbox=sandbox)
    finally:
        table.kill_all("alice")
    assert "fork: Resource temporarily unavailable" in result.output and "started 30" not in result.output, result.output


@needs_bwrap
@pytest.mark.parametrize("folder", ["/tmp", "/dev/shm"])
def test_tmp_and_shm_are_bounded_by_their_own_setting(workspace, folder):
    """Reproduction: each command's /tmp was a 1 GiB RAM tmpfs (TERMINAL_MAX_FILE_MB) and /dev/shm had no
    bound of its own. With TERMINAL_TMP_MB=16 a 40 MB write there fails for want of space."""
    result = run(f"head -c 40M /dev/zero > {folder}/fill; echo rc=$?; du -m {folder}/fill | cut -f1",
                 workspace=workspace, timeout=60, sandbox=box(tmp_mb=16))

    assert "No space left on device" in result.output and "rc=1" in result.output, result.output
    assert int(result.output.strip().splitlines()[-1]) <= 16


@needs_bwrap
def test_dev_is_not_a_writable_ram_disk(workspace):
    """Attack: bwrap's /dev is a tmpfs of half the RAM, writable by the command: 300 MB went into
    /dev/fill. Now /dev is read-only while /dev/null and the bounded /dev/shm still work."""
    result = run("head -c 30M /dev/zero > /dev/fill; echo rc=$?; echo x > /dev/null && echo null-ok; "
                 "echo y > /dev/shm/y && echo shm-ok", workspace=workspace, timeout=60, sandbox=box())

    assert "Read-only file system" in result.output and "rc=1" in result.output, result.output
    assert "null-ok" in result.output and "shm-ok" in result.output


@needs_bwrap
def test_a_command_cannot_write_past_the_workspace_quota(workspace):
    """Reproduction: 1.2 GB was written against TERMINAL_MAX_FILE_MB=1024 (per file; no quota). Here a
    30 MB file against a 20 MB quota stops at the room left."""
    result = run("head -c 30M /dev/zero > big; echo rc=$?", workspace=workspace, timeout=60,
                 sandbox=box(quota_mb=20))

    assert "rc=0" not in result.output, result.output
    assert quota.measure(workspace) <= 20 * MB


@needs_bwrap
def test_many_files_over_the_quota_block_the_next_write_until_some_are_removed(workspace, settings):
    """Reproduction: six 5 MB files (each under the per-file cap) made 30 MB against a 20 MB quota and
    later writes went on. Now the result says the workspace is over, the next command cannot write, and
    the file tools refuse, until files are deleted."""
    ctx = tool_context(settings, workspace, terminal_workspace_quota_mb=20)

    filled = terminal.terminal(ctx, {"command": "for i in 1 2 3 4 5 6; do head -c 5M /dev/zero > f$i; done"})
    after = terminal.terminal(ctx, {"command": "echo more > more.txt && echo wrote"})
    with pytest.raises(quota.QuotaExceeded) as refused:
        files.write_file(ctx, {"path": "notes.md", "content": "hello"})
    terminal.terminal(ctx, {"command": "rm f1 f2 f3 f4"})
    freed = terminal.terminal(ctx, {"command": "echo more > more.txt && echo wrote"})

    assert "over its quota" in filled["note"], filled
    assert "wrote" not in after["output"] and "over its quota" in after["note"], after
    assert refused.value.code == "workspace_quota_exceeded" and "TERMINAL_WORKSPACE_QUOTA_MB" in refused.value.message
    assert "wrote" in freed["output"] and "note" not in freed, freed


@needs_bwrap
def test_a_command_that_keeps_writing_is_killed_once_over_the_quota(workspace):
    """Reproduction: a loop of 1 MB files under the per-file cap wrote on until its timeout. Now it is
    killed soon after the workspace passes its 20 MB quota, long before its 120 s timeout."""
    result = run("i=0; while :; do head -c 1M /dev/zero > f$i; i=$((i+1)); sleep 0.02; done",
                 workspace=workspace, timeout=120, sandbox=box(quota_mb=20))

    assert not result.timed_out and result.over_quota.startswith("killed"), result
    assert "[killed: its writes took the workspace past its quota" in result.text(120)
    assert quota.measure(workspace) < 200 * MB


@needs_bwrap
def test_a_background_command_that_keeps_writing_is_killed_once_over_the_quota(workspace):
    """Reproduction: a background process is bounded by nothing but its lifetime (an hour); one writing
    1 MB files in a loop is killed by the table's reaper once the workspace passes its 20 MB quota."""
    table = ProcessTable(max_per_user=1, lifetime_seconds=3600)
    started = table.start("alice", None, "i=0; while :; do head -c 1M /dev/zero > f$i; i=$((i+1)); sleep 0.02; done",
                          workspace=workspace, sandbox=box(quota_mb=20))
    try:
        view = wait_until(lambda: (v := table.poll("alice", started["session_id"]))["status"] != "running" and v,
                          timeout=60, what="the writer to be killed")
    finally:
        table.kill_all("alice")

    assert view["status"] == "killed" and "TERMINAL_WORKSPACE_QUOTA_MB" in view["killed_because"], view
    assert quota.measure(workspace) < 200 * MB


@needs_bwrap
def test_fallocate_is_refused_so_disk_is_reserved_only_by_writing(workspace):
    """Attack: `fallocate -l 100M f` in a loop reserved 30 GB in the first second against a 100 MB quota,
    faster than any measurement. fallocate is refused (EOPNOTSUPP); posix_fallocate falls back to writing."""
    result = run("fallocate -l 100M f; echo rc=$?; python3 -c 'import os; fd = os.open(\"p\", os.O_CREAT | os.O_WRONLY); "
                 "os.posix_fallocate(fd, 0, 1 << 20); print(\"posix\", os.fstat(fd).st_size)'",
                 workspace=workspace, timeout=60, sandbox=box(quota_mb=100))

    assert "Operation not supported" in result.output and "rc=1" in result.output, result.output
    assert "posix 1048576" in result.output and quota.measure(workspace) < 2 * MB


@needs_bwrap
def test_a_swarm_of_empty_files_is_stopped_too(workspace):
    """Attack: empty files hold no data blocks, so a byte count never grows while the disk's inodes run
    out. Each entry costs a block here: 100,000 empty files against a 20 MB quota stop near 5,000."""
    result = run("for i in $(seq 100000); do : > e$i; done; echo made all", workspace=workspace, timeout=120,
                 sandbox=box(quota_mb=20))

    assert "made all" not in result.output and result.over_quota.startswith("killed"), result
    assert len(os.listdir(workspace)) < 50_000


def test_write_file_refuses_a_write_past_the_quota(settings, workspace):
    """Reproduction: write_file wrote 30 MB into a workspace whose quota is 20 MB."""
    ctx = tool_context(settings, workspace, terminal_workspace_quota_mb=20)

    files.write_file(ctx, {"path": "small.txt", "content": "a" * (5 * MB)})
    with pytest.raises(quota.QuotaExceeded):
        files.write_file(ctx, {"path": "big.txt", "content": "b" * (30 * MB)})

    assert not (workspace / "big.txt").exists() and quota.measure(workspace) < 20 * MB


@needs_bwrap
def test_a_huge_output_is_kept_as_its_head_and_tail_only(workspace):
    """Reproduction: a 300 MB output was kept whole under .hstack/outputs. With TERMINAL_OUTPUT_KEEP_MB=1
    a 30 MB output keeps its first and last half MB, and the kept file says what was dropped."""
    result = run("echo FIRST-LINE; head -c 30M /dev/zero | tr '\\0' x; echo; echo LAST-LINE", workspace=workspace,
                 timeout=60, sandbox=box(output_keep_mb=1))

    kept = (workspace / result.full_output_path).read_bytes()
    assert len(kept) < 1.1 * MB and kept.startswith(b"FIRST-LINE") and kept.rstrip().endswith(b"LAST-LINE")
    assert b"bytes omitted: TERMINAL_OUTPUT_KEEP_MB keeps the first and last 0.5 MB" in kept
    assert "first and last 0.5 MB are in" in result.output


@needs_bwrap
def test_kept_outputs_are_rotated_oldest_first(workspace):
    """Reproduction: every long output added a file to .hstack/outputs for good. With at most 3 files,
    five long outputs leave the newest three."""
    sandbox = box(outputs_max_files=3)
    paths = [run(f"echo RUN-{n}; head -c 200K /dev/zero | tr '\\0' y", workspace=workspace, timeout=60,
                 sandbox=sandbox).full_output_path for n in range(5)]

    assert [p.name for p in kept_outputs(workspace)] == [Path(p).name for p in paths[2:]]


@needs_bwrap
def test_kept_outputs_are_rotated_by_size_too(workspace):
    """Reproduction: nothing bounded the folder's size. With TERMINAL_OUTPUTS_MAX_MB=2 and 1 MB kept per
    output, the folder never holds more than 2 MB however many outputs come."""
    sandbox = box(output_keep_mb=1, outputs_max_mb=2)
    for _ in range(4):
        run("head -c 3M /dev/zero | tr '\\0' z", workspace=workspace, timeout=60, sandbox=sandbox)

    assert sum(p.stat().st_size for p in kept_outputs(workspace)) <= 2 * MB + 4096


def test_without_a_usable_cgroup_the_log_says_so_once(monkeypatch, caplog):
    """A host with no writable memory and pids cgroup keeps per-process limits; the operator reads why."""
    monkeypatch.setattr(cgroup, "_mounts", lambda: [])
    cgroup.hierarchy.cache_clear()
    try:
        with caplog.at_level("WARNING", logger=cgroup.__name__):
            found = [cgroup.for_workspace(Path("/nowhere")) for _ in range(3)]
    finally:
        cgroup.hierarchy.cache_clear()

    assert found == [None, None, None]
    warnings = [r.getMessage() for r in caplog.records if r.name == cgroup.__name__]
    assert len(warnings) == 1 and "apply per process only" in warnings[0]


def test_sparse_files_count_what_they_hold_not_their_size(workspace):
    """Attack: `truncate -s 10G f` makes a 10 GB file holding nothing; the quota counts blocks."""
    with open(workspace / "sparse", "wb") as fh:
        fh.truncate(10 * 1024 * MB)

    assert quota.measure(workspace) < MB


def test_hard_links_count_once_and_empty_files_are_not_free(workspace):
    """Attack: hard links to one file would count it many times (or a sum of sizes would); a swarm of
    empty files holds no data blocks but costs an inode and a directory entry each."""
    (workspace / "data").write_bytes(b"d" * MB)
    for n in range(10):
        os.link(workspace / "data", workspace / f"link{n}")
    for n in range(1000):
        (workspace / f"empty{n}").touch()

    used = quota.measure(workspace)
    assert MB <= used < 2 * MB + 1000 * quota.ENTRY_BYTES and used >= 1000 * quota.ENTRY_BYTES


def test_a_symlink_to_a_big_folder_is_not_walked(workspace):
    """Attack: a link to /usr in the workspace would make the root worker walk and charge the host's files."""
    (workspace / "usr").symlink_to("/usr")

    assert quota.measure(workspace) < MB


def test_measuring_stops_once_past_the_quota(workspace):
    """A million files must not be walked on every call: the walk ends once the quota is passed."""
    for n in range(3000):
        (workspace / f"e{n}").touch()

    assert quota.ENTRY_BYTES * 100 < quota.measure(workspace, stop_above=quota.ENTRY_BYTES * 100) <= quota.ENTRY_BYTES * 101


def tool_context(settings, workspace: Path, **overrides) -> ToolContext:
    """A tool context whose workspace is `workspace` (DATA_DIR/users/alice/workspace)."""
    data_dir = workspace.parents[2]
    return ToolContext(user_id="alice", session_id="ses_limits", turn_id="turn_limits",
                       settings=settings.model_copy(update={"data_dir": data_dir, **overrides}))
