"""Scheduled backups (BACKUP_INTERVAL_HOURS, off by default): DATA_DIR/backups/, the newest BACKUP_KEEP kept."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone
from pathlib import Path

from shared.backups.archive import SCHEDULED_DIR, create_backup
from shared.config import Settings

log = logging.getLogger(__name__)

PREFIX, SUFFIX = "hstack-", ".tar.gz"
STAMP = "%Y%m%dT%H%M%SZ"
DUE_SHARE = 0.9  # a beat a little early (or a second beat by mistake) never takes two backups in one interval


def backups_dir(settings: Settings) -> Path:
    return Path(settings.data_dir) / SCHEDULED_DIR


def kept(settings: Settings) -> list[Path]:
    """The scheduled backups there are, oldest first (their names sort by time)."""
    folder = backups_dir(settings)
    return sorted(folder.glob(f"{PREFIX}*{SUFFIX}")) if folder.is_dir() else []


def back_up_if_due(settings: Settings, now: datetime) -> Path | None:
    """Take a backup when the newest is older than the interval, then keep the newest BACKUP_KEEP; the new file."""
    if settings.backup_interval_hours <= 0:
        return None
    existing = kept(settings)
    if existing and now - _taken_at(existing[-1]) < timedelta(hours=settings.backup_interval_hours * DUE_SHARE):
        return None
    target = backups_dir(settings) / f"{PREFIX}{now.strftime(STAMP)}{SUFFIX}"
    create_backup(settings, target)
    for old in kept(settings)[:-settings.backup_keep]:
        old.unlink(missing_ok=True)
    log.info("scheduled backup written to %s", target)
    return target


def _taken_at(path: Path) -> datetime:
    stamp = path.name[len(PREFIX):-len(SUFFIX)]
    try:
        return datetime.strptime(stamp, STAMP).replace(tzinfo=timezone.utc)
    except ValueError:
        return datetime.min.replace(tzinfo=timezone.utc)
