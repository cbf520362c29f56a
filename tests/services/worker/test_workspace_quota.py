"""The workspace quota (TERMINAL_WORKSPACE_QUOTA_MB): kept by the terminal (foreground and background)
and the file tools, measured as the disk really held (sparse files, hard links, empty files, symlinks).

Every payload is small: a 20 MB quota, files of a few MB.
"""

from __future__ import annotations

import os

import pytest

from services.worker.sandbox import ProcessTable, quota, run
from services.worker.tools import files, terminal
from tests.services.worker.terminal_turns import alice_context as tool_context, limited as box, needs_bwrap
from tests.support.waiting import wait_until

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

MB = 1024 * 1024


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
