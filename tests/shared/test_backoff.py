"""The one backoff rule: doubling from the base, capped, and no overflow however many attempts failed."""

from __future__ import annotations

import pytest

from shared.backoff import exponential

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py


def test_each_attempt_doubles_the_wait_until_the_cap():
    assert [exponential(n, 1.0, 30.0) for n in range(1, 8)] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]


def test_a_retry_loop_that_never_ends_keeps_waiting_the_cap():
    """base * 2 ** 4999 overflows a float: the copies this rule replaced raised OverflowError there."""
    assert exponential(5000, 1.5, 60.0) == 60.0
