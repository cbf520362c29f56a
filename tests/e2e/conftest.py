"""Fixtures the end-to-end modules share."""

from __future__ import annotations

import pytest

from tests.fakes.telegram import FakeTelegram


@pytest.fixture(scope="module")
def telegram():
    """A fake Bot API of the module's own, for its gateway."""
    fake = FakeTelegram().start()
    yield fake
    fake.stop()
