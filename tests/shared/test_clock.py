"""The one clock moves for tests (in process) and for whole processes (HSTACK_CLOCK_OFFSET_SECONDS)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

from shared import clock
from shared.stores import skill_records
from tests.support.factories import make_user

DAY = timedelta(days=1)


@pytest.fixture(autouse=True)
def real_time():
    clock.reset()
    yield
    clock.reset()


def test_travel_moves_now_for_the_block_and_brings_it_back():
    before = clock.utcnow()
    with clock.travel(15 * DAY):
        inside = clock.utcnow()
    after = clock.utcnow()
    assert timedelta(days=15) <= inside - before < timedelta(days=15, minutes=1)
    assert after - before < timedelta(minutes=1) and after.tzinfo is timezone.utc


def test_advance_adds_up_until_reset():
    start = clock.utcnow()
    clock.advance(DAY)
    clock.advance(DAY)
    assert 2 * DAY <= clock.utcnow() - start < 2 * DAY + timedelta(minutes=1)
    clock.reset()
    assert clock.utcnow() - start < timedelta(minutes=1)


def test_the_environment_offset_is_read_at_each_call(monkeypatch):
    start = clock.utcnow()
    monkeypatch.setenv(clock.OFFSET_ENV, str(31 * 86400))
    assert 31 * DAY <= clock.utcnow() - start < 31 * DAY + timedelta(minutes=1)
    monkeypatch.setenv(clock.OFFSET_ENV, "not-a-number")
    with pytest.raises(ValueError, match=clock.OFFSET_ENV):
        clock.utcnow()
    monkeypatch.delenv(clock.OFFSET_ENV)
    assert clock.utcnow() - start < timedelta(minutes=1)


def test_stores_stamp_rows_with_the_moved_clock(db):
    user = make_user(db)
    with clock.travel(40 * DAY):
        skill_records.created(db, user.id, "brew-tea", "agent", "agent")
        moved_now = clock.utcnow()
    row = skill_records.record(db, user.id, "brew-tea")
    assert abs(row.created_at - moved_now) < timedelta(minutes=1)


def test_a_process_started_with_the_offset_lives_in_the_future():
    code = "from shared.clock import utcnow; print(utcnow().isoformat())"
    env = {**os.environ, clock.OFFSET_ENV: str(15 * 86400)}
    printed = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    seen = datetime.fromisoformat(printed.stdout.strip())
    assert 15 * DAY - timedelta(minutes=1) <= seen - datetime.now(timezone.utc) <= 15 * DAY
