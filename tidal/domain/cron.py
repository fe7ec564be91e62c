"""Window starts: "HH:MM" (every day) or a 5-field cron expression, both in local time.

Parsing and expansion are croniter's; this module only decides what is allowed and answers
questions about starts without a clock (pure functions).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

from croniter import croniter

_HH_MM = re.compile(r"^(\d{1,2}):(\d{2})$")
_WEEKDAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_ORDINALS = {1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 5: "5th"}
START_HINT = 'write "HH:MM" (e.g. "23:00") or a 5-field cron expression (e.g. "0 23 * * 1-5")'


@dataclass(frozen=True)
class Start:
    """A parsed window start. `cron` is always the 5-field form."""

    text: str
    cron: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int] | None  # None: any day of the month
    last_day: bool  # "L" in the day-of-month field
    months: frozenset[int]
    weekdays: frozenset[int] | None  # cron numbering, 0 = Sunday; None: any weekday
    nth_weekdays: dict[int, frozenset[int]] = field(default_factory=dict)

    def matches_date(self, day: date) -> bool:
        """Whether the start fires on this local date (at its hours and minutes)."""
        if day.month not in self.months:
            return False
        by_month_day = self.days is not None or self.last_day
        by_weekday = self.weekdays is not None
        month_day_ok = (self.days is not None and day.day in self.days) or (
            self.last_day and day.day == calendar.monthrange(day.year, day.month)[1]
        )
        weekday = (day.weekday() + 1) % 7
        weekday_ok = self.weekdays is not None and weekday in self.weekdays
        if weekday_ok and weekday in self.nth_weekdays:
            weekday_ok = (day.day - 1) // 7 + 1 in self.nth_weekdays[weekday]
        if by_month_day and by_weekday:
            return month_day_ok or weekday_ok  # classic cron: either day field may match
        if by_month_day:
            return month_day_ok
        if by_weekday:
            return weekday_ok
        return True

    def _weekday_names(self) -> list[str]:
        """APScheduler's names of the weekdays ("mon"; "2nd mon" for an nth weekday)."""
        weekdays: list[str] = []
        for wd in sorted(self.weekdays or ()):
            if wd in self.nth_weekdays:
                weekdays += [
                    f"{_ORDINALS[n]} {_WEEKDAY_NAMES[wd]}" for n in sorted(self.nth_weekdays[wd])
                ]
            else:
                weekdays.append(_WEEKDAY_NAMES[wd])
        return weekdays

    def trigger_fields(self) -> dict[str, str]:
        """Fields for APScheduler 3.x CronTrigger (weekday names, so no 0=Monday mix-up)."""
        days: list[str] = [str(d) for d in sorted(self.days or ())]
        if self.last_day:
            days.append("last")
        weekdays = self._weekday_names()
        fields = {
            "minute": ",".join(str(m) for m in sorted(self.minutes)),
            "hour": ",".join(str(h) for h in sorted(self.hours)),
            "month": ",".join(str(m) for m in sorted(self.months)),
            "day": "*",
            "day_of_week": "*",
        }
        # nth weekdays ("2nd mon") are APScheduler *day* expressions, not day_of_week ones.
        nth = [w for w in weekdays if " " in w]
        plain = [w for w in weekdays if " " not in w]
        if days or nth:
            fields["day"] = ",".join(days + nth)
        if plain:
            fields["day_of_week"] = ",".join(plain)
        return fields


def cron_expression(text: object) -> str:
    """The 5-field cron expression of a start ("HH:MM", "cron: ..." or a cron expression);
    ValueError with a one-line reason and the fix."""
    if not isinstance(text, str):
        raise ValueError(f"start must be a string; {START_HINT}")
    value = text.strip()
    if value.startswith("cron:"):  # the issue's `cron: "0 23 * * 1-5"` spelling
        value = value[len("cron:") :].strip()
    hh_mm = _HH_MM.match(value)
    if hh_mm:
        hour, minute = int(hh_mm.group(1)), int(hh_mm.group(2))
        if hour > 23 or minute > 59:
            raise ValueError(f"{text!r} is not a time of day (00:00 to 23:59); {START_HINT}")
        return f"{minute} {hour} * * *"
    if ":" in value:
        raise ValueError(f"{text!r} is not a valid time; {START_HINT}")
    if len(value.split()) != 5:
        raise ValueError(f"{text!r} is not a 5-field cron expression; {START_HINT}")
    return " ".join(value.split())


def _values(field_: list[Any], every: range) -> frozenset[int]:
    """A cron field's values ("*": all of `every`)."""
    return frozenset(every) if field_ == ["*"] else frozenset(int(v) for v in field_)


@lru_cache(maxsize=1024)
def parse_start(text: str) -> Start:
    """Parse a window start or raise ValueError with a one-line reason and the fix."""
    expr = cron_expression(text)
    try:
        expanded, nth = croniter.expand(expr)
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        reason = str(exc).split("\n")[0]
        raise ValueError(
            f"{text!r} is not a valid cron expression ({reason}); {START_HINT}"
        ) from exc
    minutes, hours, days_field, months_field, weekdays_field = expanded
    days = frozenset(d for d in days_field if isinstance(d, int))
    start = Start(
        text=text,
        cron=expr,
        minutes=_values(minutes, range(60)),
        hours=_values(hours, range(24)),
        days=None if days_field == ["*"] or not days else days,
        last_day="l" in days_field,
        months=_values(months_field, range(1, 13)),
        weekdays=None if weekdays_field == ["*"] else frozenset(int(w) % 7 for w in weekdays_field),
        nth_weekdays={int(k) % 7: frozenset(int(n) for n in v) for k, v in nth.items()},
    )
    if not _ever_fires(start):
        raise ValueError(f"{text!r} never fires (no such date); {START_HINT}")
    return start


# 28 years from a leap year cover every (date, weekday) pair of 2001-2099.
_CYCLE_START = date(2024, 1, 1)
_CYCLE_DAYS = (date(2052, 1, 1) - _CYCLE_START).days


@lru_cache(maxsize=1)
def _days_in_cycle() -> tuple[date, ...]:
    return tuple(_CYCLE_START + timedelta(days=i) for i in range(_CYCLE_DAYS))


def _ever_fires(start: Start) -> bool:
    return any(start.matches_date(d) for d in _days_in_cycle() if d.month in start.months)


def can_coincide(a: Start | str, b: Start | str) -> bool:
    """Whether two starts can ever fire at the same local minute."""
    first = parse_start(a) if isinstance(a, str) else a
    second = parse_start(b) if isinstance(b, str) else b
    if not (first.minutes & second.minutes and first.hours & second.hours):
        return False
    months = first.months & second.months
    return any(
        first.matches_date(d) and second.matches_date(d)
        for d in _days_in_cycle()
        if d.month in months
    )


# --- DST: a start inside a spring-forward gap runs at the first valid instant after it, so
# it can meet another window's start there. Zone rules are data (zoneinfo), not a clock.

_GAP_YEARS = range(2026, 2054)


@lru_cache(maxsize=64)
def dst_gaps(zone: str) -> tuple[tuple[datetime, datetime], ...]:
    """Local (naive) [start, end) of every spring-forward gap of `zone` in 2026-2053."""
    tz = ZoneInfo(zone)
    gaps: list[tuple[datetime, datetime]] = []
    for year in _GAP_YEARS:
        for month in range(1, 13):
            low = datetime(year, month, 1, tzinfo=UTC)
            high = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
            before, after = low.astimezone(tz).utcoffset(), high.astimezone(tz).utcoffset()
            if before is None or after is None or after <= before:
                continue
            while high - low > timedelta(minutes=1):  # first instant with the later offset
                middle = low + (high - low) / 2
                if middle.astimezone(tz).utcoffset() == after:
                    high = middle
                else:
                    low = middle
            instant = high.replace(second=0, microsecond=0)
            naive = instant.replace(tzinfo=None)
            gaps.append((naive + before, naive + after))
    return tuple(gaps)


def _local_minutes(start: Start, day: date) -> list[datetime]:
    if not start.matches_date(day):
        return []
    return [
        datetime(day.year, day.month, day.day, hour, minute)
        for hour in sorted(start.hours)
        for minute in sorted(start.minutes)
    ]


def _effective_minutes(start: Start, gap_start: datetime, gap_end: datetime) -> set[datetime]:
    """Local minutes the start fires on the gap's day(s), those in the gap moved to its end."""
    moved = set()
    for day in {gap_start.date(), gap_end.date()}:
        for local in _local_minutes(start, day):
            moved.add(gap_end if gap_start <= local < gap_end else local)
    return moved


def dst_collision(a: Start, b: Start, zone: str) -> date | None:
    """A date on which a DST gap moves one start onto the other's instant, or None."""
    for gap_start, gap_end in dst_gaps(zone):
        if gap_end in _effective_minutes(a, gap_start, gap_end) and gap_end in _effective_minutes(
            b, gap_start, gap_end
        ):
            return gap_start.date()
    return None
