"""A bench.search database kept between runs (`--keep DIR`), so a 1M-message history is built once.

DIR holds the SQLite file (`search.db`) and, per backend, what the history holds (`<backend>.json`:
its users, how much is stored, the phrase samples and the corpus generator's state, so growing it
further stores the same messages a fresh run would). The Postgres database is named after DIR
(`hstack_bench_<name>`). Kept databases are migrated to the head on every open: a new migration is
tried on a populated history that way. A step interrupted while storing leaves rows the state does
not know of: delete DIR and the database (`DROP DATABASE hstack_bench_<name>`) and build again.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from shared.db import Database
from shared.migrate import upgrade

PREFIX = "hstack_bench_"


def postgres_name(folder: Path) -> str:
    """The Postgres database kept for `folder`."""
    return PREFIX + re.sub(r"[^a-z0-9_]", "_", folder.resolve().name.lower())


def open_kept(folder: Path, postgres: bool) -> tuple[Database, callable]:
    """The kept database of `folder` for one backend (created empty when absent), migrated to the head."""
    folder.mkdir(parents=True, exist_ok=True)
    if postgres:
        url = _postgres_url(postgres_name(folder))
    else:
        url = f"sqlite:///{folder.resolve() / 'search.db'}"
    upgrade(url)
    db = Database(url)
    return db, db.dispose


def load_state(folder: Path, backend: str) -> dict | None:
    """What the kept history holds, or None when nothing was kept yet."""
    path = folder / f"{backend}.json"
    return json.loads(path.read_text()) if path.exists() else None


def save_state(folder: Path, backend: str, state: dict) -> None:
    (folder / f"{backend}.json").write_text(json.dumps(state))


def _postgres_url(name: str) -> str:
    import psycopg

    from tests.support.env import _postgres_base, _sqlalchemy_url

    with psycopg.connect(_postgres_base(), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    return _sqlalchemy_url(name)
