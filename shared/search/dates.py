"""Dates named in a query ("on 4 March, 2021", "in May 2019", "August"), matched against when a message was sent."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
_MONTH = "(" + "|".join(MONTHS) + ")"
_DATE = re.compile(
    rf"\b(?:(\d{{1,2}})\s+{_MONTH}|{_MONTH}(?:\s+(\d{{1,2}})\b)?)(?:,?\s+((?:19|20)\d\d))?\b", re.IGNORECASE)
_WORDS_TOO = ("may", "march")


@dataclass(frozen=True)
class Day:
    """A day, month or month of any year the query names: None parts match anything."""

    month: int
    day: int | None = None
    year: int | None = None

    def holds(self, when: datetime) -> bool:
        """Whether a message sent at `when` (UTC) falls on this date."""
        return (when.month == self.month and self.day in (None, when.day)
                and self.year in (None, when.year))


def named_dates(text: str) -> tuple[Day, ...]:
    """The dates a query names by month (with or without a day and a year)."""
    found = []
    for m in _DATE.finditer(text or ""):
        day_before, month_a, month_b, day_after, year = m.groups()
        name = month_a or month_b
        day = day_before or day_after
        if not (day or year) and (name[0].islower() or name.lower() in _WORDS_TOO):
            continue  # a bare month must be capitalised, and a bare "May" or "March" is too often a verb
        month = MONTHS.index(name.lower()) + 1
        found.append(Day(month, int(day) if day else None, int(year) if year else None))
    return tuple(found)
