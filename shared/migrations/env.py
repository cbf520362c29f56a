"""Alembic environment: the URL comes from Settings (or the caller's config), the metadata from shared.models."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import shared.models  # noqa: F401  (registers every table)
from shared.config import get_settings
from shared.db import Database
from shared.models.search import include_name

config = context.config
target_metadata = SQLModel.metadata


def _url() -> str:
    return config.attributes.get("url") or get_settings().sqlalchemy_url


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True, render_as_batch=True,
                      include_name=include_name)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    db = Database(_url())
    with db.engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True,
                          include_name=include_name)
        with context.begin_transaction():
            context.run_migrations()
    db.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
