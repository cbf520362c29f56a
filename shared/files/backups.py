"""Compressed backups of one user's skills folder, taken before a curation pass changes anything.

`DATA_DIR/users/<user>/curator/backups/<UTC time>-<token>.tar.gz` holds `skills/` whole, `.archive/`
included, lock files left out (provenance and usage live in the database); the newest N are kept.
"""

from __future__ import annotations

import os
import secrets
import tarfile
from datetime import datetime
from pathlib import Path

from shared.files.skills import LOCK_DIR

SUFFIX = ".tar.gz"


def backup_dir(data_dir: Path, user_id: str) -> Path:
    return Path(data_dir) / "users" / user_id / "curator" / "backups"


def _left_out(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """Locks and half-written files are no part of a backup."""
    parts = member.name.split("/")
    if len(parts) > 1 and parts[1] == LOCK_DIR:
        return None
    if parts[-1].endswith(".tmp") or parts[-1].startswith(".tmp-"):
        return None
    return member


def snapshot(data_dir: Path, user_id: str, now: datetime, keep: int) -> str:
    """Write a backup of the user's skills folder and keep the newest `keep`; returns its path under DATA_DIR."""
    skills = Path(data_dir) / "users" / user_id / "skills"
    folder = backup_dir(data_dir, user_id)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}{SUFFIX}"
    partial = target.with_name(f".{target.name}.tmp")
    try:
        with open(partial, "wb") as raw:
            with tarfile.open(fileobj=raw, mode="w:gz", compresslevel=6) as tar:
                if skills.is_dir():
                    tar.add(skills, arcname="skills", filter=_left_out)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    prune(data_dir, user_id, keep)
    return target.relative_to(Path(data_dir)).as_posix()


def backups(data_dir: Path, user_id: str) -> list[Path]:
    """This user's backups, oldest first."""
    folder = backup_dir(data_dir, user_id)
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if p.name.endswith(SUFFIX) and not p.name.startswith(".")]
    return sorted(found, key=lambda p: (p.stat().st_mtime_ns, p.name))


def prune(data_dir: Path, user_id: str, keep: int) -> None:
    """Remove all but the newest `keep` backups (older backups only, never a skill)."""
    for old in backups(data_dir, user_id)[:-keep]:
        old.unlink(missing_ok=True)
