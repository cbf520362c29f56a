"""Schedules as a person writes them: cron expressions in their time zone, intervals, one time; and how a run
that started after downtime counts the slots it missed (once, never once per slot)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from shared.cron import outcome
from shared.cron.schedule import next_run, parse, zone
from shared.errors import InvalidInput

pytestmark = pytest.mark.once

NOW = datetime(2026, 12, 3, 18, 0, tzinfo=timezone.utc)  # a Thursday
PARIS = ZoneInfo("Europe/Paris")


def test_a_weekday_morning_cron_is_read_in_the_users_time_zone():
    s = parse("0 7 * * 1-5", NOW, PARIS)
    assert s.kind == "cron"
    assert s.first == datetime(2026, 12, 4, 6, 0, tzinfo=timezone.utc)  # 07:00 in Paris, Friday


def test_the_weekend_is_skipped():
    friday_late = datetime(2026, 12, 4, 8, 0, tzinfo=timezone.utc)
    assert parse("0 7 * * 1-5", friday_late, PARIS).first == datetime(2026, 12, 7, 6, 0, tzinfo=timezone.utc)


def test_intervals_and_one_time_schedules():
    assert parse("every 2h", NOW, PARIS).first == NOW + timedelta(hours=2)
    assert parse("in 20 minutes", NOW, PARIS).first == NOW + timedelta(minutes=20)
    at = parse("2026-12-24T09:00", NOW, PARIS)
    assert (at.kind, at.first) == ("once", datetime(2026, 12, 24, 8, 0, tzinfo=timezone.utc))


@pytest.mark.parametrize("text", ["", "every 10s", "0 0 30 2 *", "* * *", "rm -rf /", "in 99999 weeks",
                                  "61 * * * *", "every day at 7"])
def test_unreadable_or_never_running_schedules_are_refused(text):
    with pytest.raises(InvalidInput):
        parse(text, NOW, PARIS)


def test_an_unknown_time_zone_is_refused():
    with pytest.raises(InvalidInput):
        zone("Mars/Olympus")


def test_a_daily_job_after_three_days_down_is_due_next_after_now_not_three_times():
    daily = parse("0 7 * * *", NOW, timezone.utc)
    due = daily.first
    back = due + timedelta(days=3, hours=2)
    assert next_run(daily, due, back, timezone.utc) == datetime(2026, 12, 8, 7, 0, tzinfo=timezone.utc)
    hourly = parse("every 1h", NOW, timezone.utc)
    assert next_run(hourly, NOW, NOW + timedelta(hours=5, minutes=10), timezone.utc) == NOW + timedelta(hours=6)
    assert next_run(parse("in 5 minutes", NOW, timezone.utc), NOW, NOW, timezone.utc) is None


def test_the_delivered_text_says_failed_refused_missed_or_late():
    due = NOW
    assert outcome.message("news", "failed", None, "model_unavailable", 0, due) == "[news] failed: model_unavailable"
    assert "ran late by 3 days" in outcome.message("news", "completed", "the news", None, 3 * 86400 + 60, due)
    assert outcome.message("news", "missed", None, None, 9999, due).startswith("[news] missed: it was due at")
    refused = outcome.judge("completed", "could not", None, None, [("rm -rf ~/notes", "recursive delete")])
    assert refused.status == "refused" and "rm -rf ~/notes" in refused.error
