"""Operator commands that work on this machine's database and DATA_DIR directly (import, curator run)."""

from __future__ import annotations

from services.cli.client import CliError


def open_local_database():
    """Settings and the migrated database of this machine; imported lazily so `hstack --help` stays quick."""
    from shared.config import load_settings
    from shared.db import get_database
    from services.cli.run import StartupError, migrate

    settings = load_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    try:
        migrate(settings)
    except StartupError as exc:
        raise CliError(str(exc)) from exc
    return settings, get_database(settings.sqlalchemy_url)
