"""One user's data to take away: every session as JSON, and their memory files, skills and workspace."""

from __future__ import annotations

import json
import tarfile
import tempfile
from pathlib import Path

from shared.backups import exports
from shared.backups.archive import add_bytes
from shared.config import Settings
from shared.db import Database
from shared.models.users import User
from shared.stores import sessions

USER_FOLDERS = ("memories", "skills", "workspace")


def export_user(settings: Settings, db: Database, user: User, destination: Path) -> int:
    """Write `destination` (a .tar.gz: sessions/<id>.json plus the user's folders); returns the session count."""
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with tempfile.NamedTemporaryFile(dir=destination.parent, prefix=".hstack-export-", delete=False) as tmp:
        partial = Path(tmp.name)
    try:
        with tarfile.open(partial, "w:gz") as tar:
            for session in _all_sessions(db, user.id):
                body = exports.render(exports.transcript(db, session), "json")
                add_bytes(tar, f"sessions/{session.id}.json", body.encode())
                count += 1
            root = Path(settings.data_dir) / "users" / user.id
            for folder in USER_FOLDERS:
                if (root / folder).is_dir():
                    tar.add(root / folder, arcname=folder, filter=_plain)
            add_bytes(tar, "user.json", json.dumps({"id": user.id, "name": user.name, "sessions": count}).encode())
        partial.replace(destination)
    finally:
        partial.unlink(missing_ok=True)
    return count


def _all_sessions(db: Database, user_id: str):
    cursor = None
    while True:
        page, cursor = sessions.list_sessions(db, user_id, cursor=cursor, limit=100)
        yield from page
        if cursor is None:
            return


def _plain(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """Files and folders only: a link in a workspace could point anywhere on the server."""
    return info if info.isfile() or info.isdir() else None

