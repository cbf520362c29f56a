"""Limits per sandbox, not per process: one memory and process budget per user's commands (a cgroup),
a bounded /tmp and /dev/shm, and kept outputs that are capped and rotated.

Every payload is small: 150 MB processes against a 256 MB limit, outputs of a few MB.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from services.worker.sandbox import ProcessTable, cgroup, run
from services.worker.sandbox.output import OUTPUTS_DIR
from tests.services.worker.terminal_turns import limited as box, needs_bwrap
from tests.support.waiting import wait_until

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

MB = 1024 * 1024
needs_cgroup = pytest.mark.skipif(
    cgroup.hierarchy() is None,
    reason="no writable cgroup with the memory and pids controllers here (cgroup v2 delegated to this "
           "process, or v1 as root): the aggregate limit cannot be made, only the per-process RLIMITs apply")
HOLD = r"""python3 -c '
import os, time
def holding(name):  # a holder not yet killed (a killed one stays a zombie until the shell reaps it)
    try:
        return open("/proc/%s/stat" % name[5:]).read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False
block = bytearray(150 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
open("held-%d" % os.getpid(), "w").close()
print("held", flush=True)
deadline = time.monotonic() + 5
while time.monotonic() < deadline:
    if len([n for n in os.listdir(".") if n.startswith("held-") and holding(n)]) >= 3:
        print("all three at once", flush=True)
        break
    time.sleep(0.05)
'"""


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
    # One that held may be killed later, when another's pages push the group over: the limit is on holding
    # at once, so what must never be seen is three live holders.
    lines = result.output.splitlines()  # whole lines: the shell's "Killed" report quotes the script's source
    assert "held" in lines and "all three at once" not in lines, result.output
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


@needs_bwrap
def test_rotation_spares_the_log_of_a_running_background_process(workspace):
    """Attack: rotate a running process's log away with a few long outputs; the process would go on
    writing into an unlinked file that holds disk no quota measurement sees."""
    sandbox = box(outputs_max_files=3)
    table = ProcessTable(max_per_user=1, lifetime_seconds=3600)
    started = table.start("alice", None, "echo started; sleep 1000", workspace=workspace, sandbox=sandbox)
    try:
        for n in range(4):
            run(f"echo RUN-{n}; head -c 200K /dev/zero | tr '\\0' y", workspace=workspace, timeout=60, sandbox=sandbox)
        log = workspace / started["log"]
        assert log.exists() and len(kept_outputs(workspace)) == 3
    finally:
        table.kill_all("alice")
    run("head -c 200K /dev/zero | tr '\\0' y", workspace=workspace, timeout=60, sandbox=sandbox)
    assert not log.exists()  # once the process ended, its log rotates like any other
