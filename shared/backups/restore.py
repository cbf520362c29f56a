"""Restoring a backup: every member checked against the manifest before anything is written, then moved in.

The archive is read once into a temporary directory beside DATA_DIR (same filesystem, so the final moves
are renames); a truncated archive, a member whose size or sha256 differs, a member the manifest does not
list or one it lists but the archive lacks, a link or a path that climbs out: each refuses the restore
with the temporary directory removed and DATA_DIR and the database untouched. Then the database is
loaded, the files moved into DATA_DIR, and the schema migrated to this version's head.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
import tempfile
import zlib
from pathlib import Path, PurePosixPath
from typing import Any

from alembic.script import ScriptDirectory

from shared.backups import database
from shared.backups.archive import CHUNK, DATA_PREFIX, FORMAT, MANIFEST
from shared.config import Settings
from shared.errors import InvalidInput, InvalidState
from shared.migrate import alembic_config, upgrade

MANIFEST_BYTES = 64 * 1024 * 1024
ALLOWED_ROOTS = ("database", "data")


def restore_backup(settings: Settings, source: Path, *, force: bool = False) -> dict[str, Any]:
    """Restore `source` into this stack's DATA_DIR and database; returns the archive's manifest."""
    data_dir = Path(settings.data_dir).resolve()
    if not force:
        _refuse_unless_empty(settings, data_dir)
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".hstack-restore-", dir=data_dir.parent) as tmp:
        staged = Path(tmp)
        manifest = _extract_verified(Path(source), staged)
        _refuse_unknown_schema(manifest.get("schema_revision"))
        if not (staged / database.member_name(settings)).is_file():
            raise InvalidInput(f"This backup holds a {manifest.get('database')} database; this stack uses "
                               f"{database.backend(settings)}: nothing was restored.", code="backup_database_mismatch")
        if force:
            _empty(data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        database.load(settings, staged / database.member_name(settings))
        files = staged / DATA_PREFIX.rstrip("/")
        if files.is_dir():
            for entry in files.iterdir():
                shutil.move(entry, data_dir / entry.name)
    upgrade(settings.sqlalchemy_url)
    return manifest


def _refuse_unless_empty(settings: Settings, data_dir: Path) -> None:
    if data_dir.exists() and any(data_dir.iterdir()):
        raise InvalidState(f"{data_dir} is not empty: restore into an empty DATA_DIR, or pass --force to replace "
                           "what is there.", code="data_dir_not_empty")
    if not database.is_sqlite(settings) and database.has_tables(settings):
        raise InvalidState("The database already holds tables: restore into an empty database, or pass --force "
                           "to replace them.", code="database_not_empty")


def _refuse_unknown_schema(revision: str | None) -> None:
    """A backup from a newer version has a schema this one cannot migrate from: refused before any write."""
    known = {script.revision for script in ScriptDirectory.from_config(alembic_config("")).walk_revisions()}
    if revision not in known:
        raise _refused(f"its database is at schema {revision!r}, which this version does not know (a backup of "
                       "a newer version? restore it with that version)")


def _empty(data_dir: Path) -> None:
    if not data_dir.exists():
        return
    for entry in data_dir.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _extract_verified(source: Path, staged: Path) -> dict[str, Any]:
    """Read the whole archive into `staged`, checking every member; the manifest when all of it is sound."""
    try:
        with tarfile.open(source, "r:*") as tar:
            manifest = _read_manifest(tar)
            seen: set[str] = set()
            while (info := tar.next()) is not None:
                name = _checked_name(info, manifest, seen)
                _extract_one(tar, info, staged / name, manifest["members"][name])
                seen.add(name)
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise _refused(f"it cannot be read to the end ({type(exc).__name__}: {exc}); it is truncated or "
                       "not a backup") from exc
    missing = sorted(set(manifest["members"]) - seen)
    if missing:
        raise _refused(f"it lacks {len(missing)} member(s) its manifest lists, first {missing[0]!r}; "
                       "it is truncated")
    return manifest


def _read_manifest(tar: tarfile.TarFile) -> dict[str, Any]:
    first = tar.next()
    if first is None or first.name != MANIFEST or not first.isfile() or first.size > MANIFEST_BYTES:
        raise _refused(f"it does not start with {MANIFEST}; it is not a Hermes Stack backup")
    try:
        manifest = json.loads(tar.extractfile(first).read())
    except ValueError as exc:
        raise _refused(f"its {MANIFEST} is not valid JSON") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT \
            or not isinstance(manifest.get("members"), dict):
        raise _refused(f"its {MANIFEST} is not of backup format {FORMAT}")
    return manifest


def _checked_name(info: tarfile.TarInfo, manifest: dict[str, Any], seen: set[str]) -> str:
    name = info.name
    parts = PurePosixPath(name).parts
    if not info.isfile() or not parts or parts[0] not in ALLOWED_ROOTS or ".." in parts or name.startswith("/"):
        raise _refused(f"its member {name!r} is not a plain file under database/ or data/")
    if name not in manifest["members"] or name in seen:
        raise _refused(f"its member {name!r} is not listed once in the manifest; it was tampered with")
    return name


def _extract_one(tar: tarfile.TarFile, info: tarfile.TarInfo, target: Path, expected: dict[str, Any]) -> None:
    """Copy one member to `target`, hashing as it goes; a size or sha256 other than the manifest's refuses."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest, size = hashlib.sha256(), 0
    source = tar.extractfile(info)
    with open(target, "wb") as out:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
    if size != expected.get("size") or digest.hexdigest() != expected.get("sha256"):
        raise _refused(f"its member {info.name!r} does not match the manifest's checksum; it was tampered with "
                       "or damaged")


def _refused(why: str) -> InvalidInput:
    return InvalidInput(f"Backup refused, nothing was restored: {why}.", code="backup_invalid")
