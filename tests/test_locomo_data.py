"""LoCoMo's development split is read from beside the checkout, never from a copy inside the project."""

from __future__ import annotations

import pytest

from bench.locomo import DATA_RELATIVE, default_data

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py


def test_the_data_is_read_from_beside_the_checkout_not_from_inside_it(tmp_path, monkeypatch):
    monkeypatch.delenv("LOCOMO_DATA", raising=False)
    checkout = tmp_path / "work" / "repo"
    inside, beside = checkout / DATA_RELATIVE, tmp_path / "work" / DATA_RELATIVE
    inside.parent.mkdir(parents=True)
    inside.write_text("[]")

    assert default_data(checkout) == beside  # a copy in the project's own shared/ package is never read

    beside.parent.mkdir(parents=True)
    beside.write_text("[]")
    assert default_data(checkout) == beside


def test_a_worktree_finds_the_data_further_up(tmp_path, monkeypatch):
    monkeypatch.delenv("LOCOMO_DATA", raising=False)
    data = tmp_path / DATA_RELATIVE
    data.parent.mkdir(parents=True)
    data.write_text("[]")

    assert default_data(tmp_path / "worktrees" / "branch") == data
