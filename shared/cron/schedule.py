"""A job's schedule: a cron expression (`0 7 * * 1-5`), an interval (`every 2h`) or one time (`in 20 minutes`,
an ISO-8601 time), read in the job's time zone. Cron expressions are croniter's; nothing here parses them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadCronError, CroniterBadDateError, CroniterNotAlphaError, croniter

from shared.errors import InvalidInput

MIN_INTERVAL = timedelta(minutes=1)
MAX_RELATIVE = timedelta(days=3660)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_AMOUNT = r"(\d{1,6})\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?|d|days?|w|weeks?)"
_EVERY = re.compile(rf"^every\s+{_AMOUNT}$", re.IGNORECASE)
_IN = re.compile(rf"^in\s+{_AMOUNT}$", re.IGNORECASE)
_CRON_CHARS = re.compile(r"^[0-9A-Za-z*/,\-? ]+$")


@dataclass(frozen=True)
class Schedule:
    """`kind` is cron, interval or once; `first` is the first time it is due."""

    kind: str
    text: str
    first: datetime
    every: timedelta | None = None


def zone(name: str | None) -> tzinfo:
    """The named IANA zone, or the server's own when no name is given."""
    if not name:
        from tzlocal import get_localzone

        return get_localzone()
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInput(f"Unknown time zone {name!r} (an IANA name such as Europe/Paris).",
                           code="invalid_timezone") from None


def _amount(match: re.Match) -> timedelta:
    return timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)[0].lower()])


def parse(text: str, now: datetime, tz: tzinfo) -> Schedule:
    """The schedule `text` names, due first after `now`; an unreadable one is InvalidInput."""
    text = " ".join(text.split())
    if m := _EVERY.match(text):
        every = _amount(m)
        if every < MIN_INTERVAL:
            raise InvalidInput("An interval is at least one minute.", code="invalid_schedule")
        return Schedule("interval", text, now + every, every)
    if m := _IN.match(text):
        delay = _amount(m)
        if delay > MAX_RELATIVE:
            raise InvalidInput("A one-time job runs within ten years.", code="invalid_schedule")
        return Schedule("once", text, now + delay)
    if at := _iso(text, tz):
        return Schedule("once", text, at)
    if len(text.split()) == 5 and _CRON_CHARS.match(text):
        return Schedule("cron", text, _cron_next(text, now, tz))
    raise InvalidInput("A schedule is a cron expression ('0 7 * * 1-5'), an interval ('every 2h'), 'in 20 minutes' "
                       "or an ISO-8601 time.", code="invalid_schedule")


def _iso(text: str, tz: tzinfo) -> datetime | None:
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        return None
    return at.replace(tzinfo=tz) if at.tzinfo is None else at


def _cron_next(text: str, after: datetime, tz: tzinfo) -> datetime:
    try:
        return croniter(text, after.astimezone(tz)).get_next(datetime)
    except (CroniterBadCronError, CroniterBadDateError, CroniterNotAlphaError, ValueError, KeyError):
        raise InvalidInput(f"{text!r} is not a cron expression that ever runs.", code="invalid_schedule") from None


def next_run(schedule: Schedule, due: datetime, now: datetime, tz: tzinfo) -> datetime | None:
    """When a job that was due at `due` and runs `now` is due again: one run for any number of missed slots,
    so the next is always after now; a one-time job has none."""
    if schedule.kind == "once":
        return None
    if schedule.kind == "interval":
        assert schedule.every is not None
        missed = max(0, (now - due) // schedule.every)
        return due + schedule.every * (missed + 1)
    return _cron_next(schedule.text, now, tz)
