"""Taking a backup: the database and DATA_DIR's files staged, checksummed, and written as one tar archive.

Members: `manifest.json` first (format, versions, schema revision, and the sha256 and size of every other
member), `database/…` (an SQLite copy or a Postgres dump), `data/…` (DATA_DIR's files: memories, skills,
workspaces, curator backups). The SQLite database itself, its WAL and the scheduled backups are left out
of `data/`: the database travels as its consistent copy, and a backup never holds older backups.
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
import shutil
import sqlite3
import tarfile
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from shared.backups import database
from shared.clock import utcnow
from shared.config import Settings

FORMAT = 1
MANIFEST = "manifest.json"
DATA_PREFIX = "data/"
SCHEDULED_DIR = "backups"  # DATA_DIR/backups: where the scheduled backups are kept
CHUNK = 1 << 20


def create_backup(settings: Settings, destination: Path) -> dict[str, Any]:
    """Write a backup of this stack to `destination` (written beside it, then renamed); returns its manifest."""
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".hstack-backup-", dir=destination.parent) as tmp:
        staging = Path(tmp) / "staging"
        staging.mkdir()
        database.dump(settings, staging)
        _copy_files(settings, staging / DATA_PREFIX.rstrip("/"))
        manifest = _manifest(settings, staging)
        partial = Path(tmp) / "backup.tar.gz"
        with tarfile.open(partial, "w:gz") as tar:
            add_bytes(tar, MANIFEST, json.dumps(manifest, indent=2, sort_keys=True).encode())
            for name in sorted(manifest["members"]):
                tar.add(staging / name, arcname=name, recursive=False)
        partial.chmod(0o600)  # every user's conversations and the keys' digests: the operator's eyes only
        partial.replace(destination)
    return manifest


def add_bytes(tar: tarfile.TarFile, name: str, body: bytes) -> None:
    """One member made from bytes in memory, readable by its owner only."""
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(body), int(utcnow().timestamp()), 0o600
    tar.addfile(info, io.BytesIO(body))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _excluded(settings: Settings) -> set[Path]:
    """Paths under DATA_DIR a backup leaves out of `data/`."""
    data_dir = Path(settings.data_dir).resolve()
    skipped = {data_dir / SCHEDULED_DIR}
    if database.is_sqlite(settings):
        db_file = database.sqlite_file(settings).resolve()
        skipped |= {Path(f"{db_file}{suffix}") for suffix in ("", "-wal", "-shm", "-journal")}
    return skipped


def _copy_files(settings: Settings, target: Path) -> None:
    """Copy DATA_DIR's regular files (no links, sockets or devices) into `target`, keeping their paths."""
    data_dir = Path(settings.data_dir).resolve()
    skipped = _excluded(settings)
    target.mkdir(parents=True, exist_ok=True)
    if not data_dir.is_dir():
        return
    for path in sorted(data_dir.rglob("*")):
        if path in skipped or any(parent in skipped for parent in path.parents):
            continue
        if path.is_symlink() or not path.is_file():
            continue
        copy = target / path.relative_to(data_dir)
        copy.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(path, copy)
        except FileNotFoundError:  # removed while we walked: it is not part of this backup
            continue


def _manifest(settings: Settings, staging: Path) -> dict[str, Any]:
    members = {}
    for path in sorted(staging.rglob("*")):
        if path.is_file():
            members[path.relative_to(staging).as_posix()] = {"sha256": sha256_file(path), "size": path.stat().st_size}
    return {
        "format": FORMAT,
        "created_at": utcnow().isoformat(),
        "database": database.backend(settings),
        "schema_revision": database.schema_revision(settings),
        "versions": {"hstack": _version(), "python": platform.python_version(), "sqlite": sqlite3.sqlite_version},
        "members": members,
    }


def _version() -> str:
    try:
        return metadata.version("hermes-stack")
    except metadata.PackageNotFoundError:
        return "unknown"
