"""Public ids: time-ordered by millisecond, with fresh randomness in every id."""

from __future__ import annotations

import pytest

from shared import ids

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"


def random_part(value: str) -> int:
    digits = value.split("_", 1)[1][10:]
    number = 0
    for char in digits:
        number = number * 32 + ALPHABET.index(char)
    return number


def test_ids_made_in_the_same_millisecond_share_no_counter(monkeypatch):
    """Finding: ids created in the same millisecond were sequential (the random part was incremented), so
    one id gave away its neighbours. Now each id draws fresh randomness: within a frozen millisecond
    no two consecutive ids differ by one, and they still share the millisecond prefix."""
    monkeypatch.setattr(ids.time, "time", lambda: 1_800_000_000.123)
    made = [ids.new_id("ses") for _ in range(200)]
    assert len(set(made)) == 200
    assert len({m[:14] for m in made}) == 1  # "ses_" + the same 10-char millisecond
    steps = [random_part(b) - random_part(a) for a, b in zip(made, made[1:])]
    assert not any(step == 1 for step in steps)
    assert any(step < 0 for step in steps)  # not monotonic within the millisecond either


def test_ids_sort_by_their_millisecond(monkeypatch):
    clock = iter([1_800_000_000.001, 1_800_000_000.002, 1_800_000_001.000])
    monkeypatch.setattr(ids.time, "time", lambda: next(clock))
    made = [ids.new_id("turn") for _ in range(3)]
    assert made == sorted(made)
    assert all(len(m) == len("turn_") + 26 for m in made)
