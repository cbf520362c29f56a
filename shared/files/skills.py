"""Skill folders on disk: where they live, safe paths inside them, atomic writes, one lock per skill.

Layout per user: `DATA_DIR/users/<user>/skills/<name>/` (active or stale), `…/skills/.archive/<name>/`
(archived) and `…/skills/.locks/` (the flocks writers hold). The locks live outside the skill folders
so archiving or restoring a folder never moves its lock away. A skill's lock is one of LOCK_STRIPES
files picked by a hash of its name, so the folder never grows with the names clients try (a lock
file per name grew by one for every archive of a skill that did not exist) and a name is never
part of a file name before it is checked.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from shared.files.atomic import fsync_dir
from shared.errors import Conflict, InvalidInput, NotFound
from shared.security.paths import resolve_inside
from shared.files.skill_format import SKILL_FILE, SUPPORT_DIRS

ARCHIVE_DIR = ".archive"
LOCK_DIR = ".locks"
LOCK_STRIPES = 64


@dataclass(frozen=True)
class SkillRoots:
    """The folders one user's skills are read from and written to."""

    bundled: Path
    user: Path

    @classmethod
    def for_user(cls, data_dir: Path, bundled: Path, user_id: str) -> "SkillRoots":
        return cls(bundled=Path(bundled), user=Path(data_dir) / "users" / user_id / "skills")

    @property
    def archive(self) -> Path:
        return self.user / ARCHIVE_DIR

    def active_dir(self, name: str) -> Path:
        return self.user / name

    def archived_dir(self, name: str) -> Path:
        return self.archive / name

    def bundled_dir(self, name: str) -> Path:
        return self.bundled / name


def is_skill_dir(path: Path) -> bool:
    """A real folder (never a symlink) holding a SKILL.md that is a regular file."""
    return path.is_dir() and not path.is_symlink() and (path / SKILL_FILE).is_file() \
        and not (path / SKILL_FILE).is_symlink()


def skill_dirs(root: Path) -> list[Path]:
    """The skill folders directly under `root`, by name; dot-folders (.archive, .locks) are not skills."""
    if not root.is_dir():
        return []
    return sorted((p for p in root.iterdir() if not p.name.startswith(".") and is_skill_dir(p)),
                  key=lambda p: p.name)


def lock_file(name: str) -> str:
    """The lock file guarding this skill: one of LOCK_STRIPES, by a stable hash of its name.

    Two skills may share a stripe; that only serializes their writers, because nobody holds two
    skills' locks at once (the curator's own lock is a separate file, see `named_lock`).
    """
    stripe = int.from_bytes(hashlib.sha256(name.encode("utf-8", "surrogatepass")).digest()[:4], "big")
    return f"skill-{stripe % LOCK_STRIPES:02d}.lock"


@contextmanager
def skill_lock(roots: SkillRoots, name: str) -> Iterator[None]:
    """Hold the exclusive flock of one skill; other threads and processes writing it wait."""
    with named_lock(roots, lock_file(name)):
        yield


@contextmanager
def named_lock(roots: SkillRoots, file_name: str) -> Iterator[None]:
    """Hold the exclusive flock `.locks/<file_name>` of this user's skills folder."""
    lock_dir = roots.user / LOCK_DIR
    lock_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_dir / file_name, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def refuse_symlinks(skill_dir: Path, relative: str) -> None:
    """Refuse when the skill folder or any part of `relative` inside it is a symlink."""
    current = skill_dir
    for part in [None, *relative.split("/")]:
        current = current if part is None else current / part
        if current.is_symlink():
            shown = relative if part is not None else skill_dir.name
            raise InvalidInput(f"{shown!r} is a symbolic link; skills may not contain links.",
                               code="skill_path_invalid")


def inside(skill_dir: Path, relative: str) -> Path:
    """The file `relative` names in the skill folder; links and escapes are refused."""
    refuse_symlinks(skill_dir, relative)
    try:
        target = resolve_inside(skill_dir, relative)
    except InvalidInput as exc:
        raise InvalidInput(f"The path {relative!r} is not inside the skill folder.", code="skill_path_invalid") \
            from exc
    if target == skill_dir.resolve():
        raise InvalidInput("A file path inside the skill folder is required.", code="skill_path_invalid")
    return target


def read_text(path: Path, shown: str) -> str:
    if not path.is_file():
        raise NotFound(f"No file {shown!r} in this skill.", code="skill_file_not_found")
    return path.read_text(encoding="utf-8", errors="replace")


def support_files(skill_dir: Path) -> list[str]:
    """Every supporting file of a skill (relative, sorted); links are never followed or listed."""
    found: list[str] = []
    for sub in SUPPORT_DIRS:
        base = skill_dir / sub
        if not base.is_dir() or base.is_symlink():
            continue
        for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
            dirnames[:] = [d for d in dirnames if not (Path(dirpath) / d).is_symlink()]
            for name in filenames:
                entry = Path(dirpath) / name
                if entry.is_file() and not entry.is_symlink() and not name.endswith(".tmp"):
                    found.append(entry.relative_to(skill_dir).as_posix())
    return sorted(found)


def remove_file(skill_dir: Path, target: Path) -> None:
    """Delete one supporting file and the sub-folders it leaves empty (never the skill folder)."""
    skill_dir = skill_dir.resolve()
    target.unlink()
    parent = target.parent
    while parent != skill_dir and parent.is_relative_to(skill_dir) and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent
    fsync_dir(parent)


def move_dir(source: Path, destination: Path) -> None:
    """Move a skill folder (archive or restore) with one rename; an existing destination is refused."""
    if destination.exists() or destination.is_symlink():
        raise Conflict(f"{destination.name!r} already exists in {destination.parent.name or 'the skills'} "
                       "folder; nothing was moved.", code="skill_exists")
    destination.parent.mkdir(parents=True, exist_ok=True)
    os.rename(source, destination)
    fsync_dir(destination.parent)
    fsync_dir(source.parent)


def discard_dir(path: Path) -> None:
    """Remove a folder this call created and could not finish (a failed create or install)."""
    shutil.rmtree(path, ignore_errors=True)
