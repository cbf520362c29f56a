"""Fixtures for the shared/ tests."""

from __future__ import annotations

import pytest

from tests.support.env import create_postgres_database


@pytest.fixture
def blank_url(settings, tmp_path):
    """A fresh, empty database of the suite's backend (for migration tests), dropped afterwards."""
    if settings.sqlalchemy_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'blank.db'}"
        return
    url, drop = create_postgres_database()
    try:
        yield url
    finally:
        drop()
