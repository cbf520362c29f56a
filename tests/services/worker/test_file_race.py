"""File tools against a workspace whose folders are swapped for links while they run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from shared.errors import HermesError
from services.worker.tools import beneath, files, identity, patch as patch_tool, workspace
from services.worker.tools.registry import ToolContext

pytestmark = pytest.mark.once

ROUNDS = 150  # each round is one write_file, one patch and one read_file
SECRET = "B's SECRET\n"

# Exchanges `d` (a folder) and `s` (a link) in a workspace as fast as it can, a bounded number of times.
SWAPPER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
print("ready", flush=True)
for _ in range(int(sys.argv[2])):
    if libc.renameat2(fd, b"d", fd, b"s", 2) != 0:  # RENAME_EXCHANGE
        sys.exit(ctypes.get_errno())
"""


def _ctx(data_dir: Path, settings, user: str) -> ToolContext:
    return ToolContext(user_id=user, session_id="ses_race", turn_id="turn_race",
                       settings=settings.model_copy(update={"data_dir": data_dir}))


def _tree(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every entry under root with its owner and (for files) content."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            found[str(path.relative_to(root))] = (st.st_uid, path.read_bytes() if path.is_file() else b"")
    return found


def _kernel_has_openat2() -> bool:
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    try:
        return beneath.has_openat2(fd)
    finally:
        os.close(fd)


def _hammer(a: ToolContext) -> list[str]:
    """Hundreds of writes, patches and reads of d/f.txt; what the reads returned."""
    reads = []
    for n in range(ROUNDS):
        for call in (lambda: files.write_file(a, {"path": "d/f.txt", "content": f"alpha {n}\n"}),
                     lambda: patch_tool.patch(a, {"path": "d/f.txt", "old_string": f"alpha {n}",
                                                  "new_string": f"beta {n}"}),
                     lambda: reads.append(files.read_file(a, {"path": "d/f.txt"}))):
            try:
                call()
            except (HermesError, OSError):
                pass  # refused while `d` was the link (the tool runner reports either as the call's error)
    return reads


@pytest.mark.parametrize("resolver", ["openat2", "component walk"])
@pytest.mark.parametrize("acting", ["as the worker", "as the sandbox uid"])
def test_a_folder_swapped_for_a_link_never_leads_a_tool_into_another_workspace(settings, tmp_data_dir, monkeypatch,
                                                                             acting, resolver):
    """Reproduction: a process in user A's workspace exchanged folder `d` with a link `s` to user B's
    workspace (renameat2 RENAME_EXCHANGE in a loop) while the tools read, wrote and patched d/f.txt.
    The tools checked the path, then opened it by name: reads returned B's file, writes replaced it
    (owned by root under a root worker) and temp files were left in B's workspace."""
    if acting == "as the sandbox uid" and os.geteuid() != 0:
        pytest.skip("the sandbox uid is taken on only by a root worker; this run is not root")
    if acting == "as the worker":
        monkeypatch.setattr(workspace, "sandbox_uid", lambda settings: None)
    if resolver == "openat2" and not _kernel_has_openat2():
        pytest.skip("this kernel has no openat2; the component walk is what runs")
    monkeypatch.setattr(beneath, "_openat2_works", resolver == "openat2")
    a, b = _ctx(tmp_data_dir, settings, "usr_a"), _ctx(tmp_data_dir, settings, "usr_b")
    (b.workspace / "f.txt").write_text(SECRET)
    (a.workspace / "d").mkdir()
    (a.workspace / "s").symlink_to(b.workspace)
    files.write_file(a, {"path": "d/f.txt", "content": "alpha\n"})
    before = _tree(b.workspace)

    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(a.workspace), "20000000"],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert swapper.stdout.readline() == "ready\n"
        reads = _hammer(a)
        still_swapping = swapper.poll() is None
    finally:
        swapper.kill()
        swapper.wait()

    assert still_swapping, "the swapper stopped before the tools were done"
    after = _tree(b.workspace)
    found = {"reads of B's file": sum("SECRET" in r for r in reads),
             "entries changed in B's workspace": sorted(k for k in set(before) | set(after)
                                                        if before.get(k) != after.get(k)),
             "temp files left in A's workspace": [k for k in _tree(a.workspace) if k.endswith(".tmp")]}
    assert found == {"reads of B's file": 0, "entries changed in B's workspace": [],
                               "temp files left in A's workspace": []}


def test_files_a_root_worker_writes_belong_to_the_sandbox_uid(settings, tmp_data_dir):
    """A root worker wrote workspace files as root: the sandbox (uid 65534) could not change them."""
    if os.geteuid() != 0:
        pytest.skip("only a root worker changes its filesystem uid; this run is not root")
    ctx = _ctx(tmp_data_dir, settings, "usr_owner")

    files.write_file(ctx, {"path": "new/dir/f.txt", "content": "x = 1\n"})
    patch_tool.patch(ctx, {"path": "new/dir/f.txt", "old_string": "x = 1", "new_string": "x = 2"})

    uid = settings.terminal_sandbox_uid
    owners = {name: owner for name, (owner, _) in _tree(ctx.workspace).items()}
    assert owners == {"new": uid, "new/dir": uid, "new/dir/f.txt": uid}
    assert ctx.workspace.stat().st_uid == uid
    assert identity.current() == (0, 0)
