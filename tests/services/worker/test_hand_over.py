"""Handing a root worker's workspace to the sandbox uid: whatever tree the user built, without giving away root's files."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from services.worker.sandbox.stage import hand_over

pytestmark = [pytest.mark.once,
              pytest.mark.skipif(os.geteuid() != 0, reason="only a root worker hands files over (chown)")]
UID = 65534


def _deep(workspace: Path, depth: int) -> None:
    """Folders nested `depth` deep, made one level at a time as a shell in the sandbox can."""
    fd = os.open(workspace, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("a", dir_fd=fd)
        nxt = os.open("a", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nxt
    os.close(fd)


def _remove_deep(workspace: Path) -> None:
    """Remove what _deep made, bottom up (shutil.rmtree recurses too deep for it)."""
    fds = [os.open(workspace, os.O_RDONLY)]
    while os.path.isdir(f"/proc/self/fd/{fds[-1]}/a"):
        fds.append(os.open("a", os.O_RDONLY, dir_fd=fds[-1]))
    os.close(fds.pop())
    while fds:
        os.rmdir("a", dir_fd=fds[-1])
        os.close(fds.pop())


def test_a_very_deep_tree_does_not_break_the_hand_over(tmp_path):
    """Reproduction: 1,500 nested folders in the workspace made hand_over (os.fwalk, recursive) raise
    RecursionError, so every later terminal command of that user failed."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "top.txt").write_text("root wrote this")
    _deep(workspace, 1500)

    try:
        hand_over(workspace, UID)
        owners = (workspace / "top.txt").stat().st_uid, (workspace / "a" / "a").stat().st_uid
    finally:
        _remove_deep(workspace)

    assert owners == (UID, UID)


def test_a_hard_link_to_a_root_file_is_not_given_away():
    """Reproduction: a hard link in the workspace to a root-owned file elsewhere on the same filesystem
    (possible where protected_hardlinks is off, or planted before) was chowned, giving the file away."""
    base = Path(tempfile.mkdtemp(prefix="hstack-handover-"))
    workspace, outside = base / "workspace", base / "root-only.conf"
    workspace.mkdir()
    outside.write_text("root's")
    os.link(outside, workspace / "linked")

    hand_over(workspace, UID)

    assert outside.stat().st_uid == 0 and workspace.stat().st_uid == UID
    (workspace / "linked").unlink()
    outside.unlink()
    workspace.rmdir()
    base.rmdir()
