"""Time references in queries: the period a question names ("last week", "on 16 June"). Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """The half-open period [start, end) a query refers to ("last week", "in March 2024")."""

    start: datetime
    end: datetime


_MONTHS = "january february march april may june july august september october november december"
_MONTH_NUMBER = {name: i for i, name in enumerate(_MONTHS.split(), start=1)}
_COUNT_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
                "a couple of": 2, "a few": 3, "few": 3, "several": 3}  # fmt: skip
_DAYS_PER_UNIT = {"day": 1, "week": 7, "month": 30, "year": 365}
_COUNT = r"(\d{1,3}|a couple of|a few|few|several|an?|one|two|three|four|five|six)"
_UNITS = r"(day|week|month|year)s?\b"
_AGO = re.compile(r"\b" + _COUNT + " " + _UNITS + " ago")
_CALENDAR = re.compile(r"\b(last|this|previous) (week|month|year)\b")
_PAST = re.compile(r"\b(?:past|last) (?:" + _COUNT + " )?" + _UNITS)
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_NAME = "(" + _MONTHS.replace(" ", "|") + ")"
_MONTH_DAY = re.compile(r"\b" + _MONTH_NAME + r" (\d{1,2})(?:st|nd|rd|th)?\b(?:,? (\d{4}))?")
_DAY_MONTH = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)? (?:of )?" + _MONTH_NAME + r"\b(?:,? (\d{4}))?")
_LAST_WEEKDAY = re.compile(r"\blast (mon|tues|wednes|thurs|fri|satur|sun)day\b")
_WEEKDAYS = ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun")
_MONTH_YEAR = re.compile(r"\b" + _MONTH_NAME + r",? (\d{4})\b")
_IN_MONTH = re.compile(r"\b(?:in|during) " + _MONTH_NAME + r"\b")
_IN_YEAR = re.compile(r"\b(?:in|during) ((?:19|20)\d\d)\b")
_RECENTLY = re.compile(r"\b(?:recently|lately|these days)\b")


def _midnight(when: datetime) -> datetime:
    return when.replace(hour=0, minute=0, second=0, microsecond=0)


def _day(when: datetime, days_back: int = 0) -> TimeWindow:
    start = _midnight(when) - timedelta(days=days_back)
    return TimeWindow(start, start + timedelta(days=1))


def _month(year: int, month: int, now: datetime) -> TimeWindow:
    start = _midnight(now).replace(year=year, month=month, day=1)
    return TimeWindow(start, start.replace(year=year + month // 12, month=month % 12 + 1))


def _year(year: int, now: datetime) -> TimeWindow:
    start = _midnight(now).replace(year=year, month=1, day=1)
    return TimeWindow(start, start.replace(year=year + 1))


def _latest_year(now: datetime, month: int, day: int = 1) -> int:
    # "in March" / "on May 3" without a year means the latest one that has started.
    return now.year if (month, day) <= (now.month, now.day) else now.year - 1


def _calendar(now: datetime, which: str, unit: str) -> TimeWindow:
    back = int(which != "this")
    if unit == "week":
        start = _midnight(now) - timedelta(days=now.weekday() + 7 * back)
        return TimeWindow(start, start + timedelta(days=7))
    if unit == "month":
        year, month0 = divmod(now.year * 12 + now.month - 1 - back, 12)
        return _month(year, month0 + 1, now)
    return _year(now.year - back, now)


def _count(word: str | None) -> int:
    return 1 if word is None else _COUNT_WORDS.get(word) or int(word)


def parse_time_window(query: str, now: datetime) -> TimeWindow | None:
    """The period a query mentions, relative to `now` (same tz as `now`); None if it names none."""
    low = " ".join(query.casefold().split())
    try:
        if m := _ISO_DATE.search(low):
            return _day(now.replace(year=int(m[1]), month=int(m[2]), day=int(m[3])))
        if "day before yesterday" in low:
            return _day(now, 2)
        if re.search(r"\byesterday\b", low):
            return _day(now, 1)
        if re.search(r"\b(?:today|tonight|this morning)\b", low):
            return _day(now)
        if m := _AGO.search(low):
            days = _count(m[1]) * _DAYS_PER_UNIT[m[2]]
            if days < 7:
                return _day(now, days)
            center, half = now - timedelta(days=days), timedelta(days=_DAYS_PER_UNIT[m[2]] / 2)
            return TimeWindow(center - half, center + half)
        if m := _CALENDAR.search(low):
            return _calendar(now, m[1], m[2])
        if m := _PAST.search(low):
            return TimeWindow(now - timedelta(days=_count(m[1]) * _DAYS_PER_UNIT[m[2]]), now)
        if m := _LAST_WEEKDAY.search(low):
            return _day(now, (now.weekday() - _WEEKDAYS.index(m[1]) - 1) % 7 + 1)
        if (m := _MONTH_DAY.search(low)) or (m := _DAY_MONTH.search(low)):
            month_first = m.re is _MONTH_DAY
            month = _MONTH_NUMBER[m[1] if month_first else m[2]]
            day = int(m[2] if month_first else m[1])
            year = int(m[3]) if m[3] else _latest_year(now, month, day)
            return _day(now.replace(year=year, month=month, day=day))
        if m := _MONTH_YEAR.search(low):
            return _month(int(m[2]), _MONTH_NUMBER[m[1]], now)
        if m := _IN_MONTH.search(low):
            month = _MONTH_NUMBER[m[1]]
            return _month(_latest_year(now, month), month, now)
        if m := _IN_YEAR.search(low):
            return _year(int(m[1]), now)
        if _RECENTLY.search(low):
            return TimeWindow(now - timedelta(days=14), now)
    except (ValueError, OverflowError):  # "2024-02-31", "year 0": not a date after all
        return None
    return None
