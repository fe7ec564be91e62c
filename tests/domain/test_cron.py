"""Window starts: "HH:MM" or 5-field cron, and whether two starts can fire together."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from tidal.domain.cron import can_coincide, dst_collision, dst_gaps, parse_start


def test_hh_mm_is_a_daily_cron() -> None:
    """ "23:00" means every day at 23:00 local time."""
    start = parse_start("23:00")
    assert start.cron == "0 23 * * *"
    assert start.hours == {23} and start.minutes == {0}
    assert start.days is None and start.weekdays is None


def test_cron_prefix_is_accepted() -> None:
    """ "cron: 0 23 * * 1-5" is the same start as "0 23 * * 1-5"."""
    assert parse_start("cron: 0 23 * * 1-5").cron == "0 23 * * 1-5"


def test_cron_weekdays_expand() -> None:
    """ "0 23 * * 1-5" fires Monday to Friday (cron numbering, 0 = Sunday)."""
    start = parse_start("0 23 * * 1-5")
    assert start.weekdays == frozenset({1, 2, 3, 4, 5})
    assert start.matches_date(date(2026, 12, 4))  # a Friday
    assert not start.matches_date(date(2026, 12, 5))  # a Saturday


@pytest.mark.parametrize(
    "text",
    [
        "24:00",
        "23:60",
        "7:5",
        "x",
        "0 23 * *",
        "0 0 23 * * *",
        "61 7 * * *",
        "0 7 31 2 *",
        "@daily",
        "0 7 * * 8",
    ],
)
def test_bad_starts_are_refused_with_the_fix(text: str) -> None:
    """Bad times, wrong field counts, out-of-range values and never-firing dates are refused."""
    with pytest.raises(ValueError, match="HH:MM"):
        parse_start(text)


def test_day_fields_follow_classic_cron_or() -> None:
    """With both day-of-month and day-of-week restricted, either one matching is enough."""
    start = parse_start("0 7 1 * 1")
    assert start.matches_date(date(2026, 12, 1))  # the 1st, a Tuesday
    assert start.matches_date(date(2026, 12, 7))  # a Monday
    assert not start.matches_date(date(2026, 12, 8))


def test_last_day_and_nth_weekday() -> None:
    """ "L" is the last day of the month, "1#2" the second Monday."""
    assert parse_start("0 7 L * *").matches_date(date(2028, 2, 29))
    assert not parse_start("0 7 L * *").matches_date(date(2028, 2, 28))
    second_monday = parse_start("0 7 * * 1#2")
    assert second_monday.matches_date(date(2026, 12, 14))
    assert not second_monday.matches_date(date(2026, 12, 7))


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("23:00", "0 23 * * 1-5", True),
        ("23:00", "07:00", False),
        ("0 23 * * 6", "0 23 * * 1-5", False),
        ("*/15 7 * * *", "30 7 * * *", True),
        ("0 7 L * *", "0 7 * * 1#2", False),
        ("0 7 31 * *", "0 7 * 2 *", False),
        ("0 7 29 2 *", "0 7 * * 1", True),
    ],
)
def test_can_coincide(a: str, b: str, expected: bool) -> None:
    """Two starts coincide only if some local date and minute fires both."""
    assert can_coincide(a, b) is expected
    assert can_coincide(b, a) is expected


def test_trigger_fields_name_weekdays() -> None:
    """Fields for APScheduler use weekday names, so cron's 0 = Sunday is not misread."""
    fields = parse_start("30 19 * * 0,5").trigger_fields()
    assert fields["day_of_week"] == "sun,fri"
    assert fields["hour"] == "19" and fields["minute"] == "30"
    assert parse_start("0 7 * * 1#2").trigger_fields()["day"] == "2nd mon"
    assert parse_start("0 7 L * *").trigger_fields()["day"] == "last"


def test_dst_gaps_of_berlin_and_new_york() -> None:
    """Spring-forward gaps are found as local [02:00, 03:00) on the right Sundays."""
    berlin = dst_gaps("Europe/Berlin")
    assert berlin[0] == (datetime(2026, 3, 29, 2, 0), datetime(2026, 3, 29, 3, 0))
    assert dst_gaps("America/New_York")[0][0] == datetime(2026, 3, 8, 2, 0)
    assert dst_gaps("Asia/Shanghai") == ()


@pytest.mark.parametrize(
    ("a", "b", "zone", "collides"),
    [
        ("02:30", "03:00", "Europe/Berlin", True),
        ("02:30", "02:45", "Europe/Berlin", True),
        ("02:30", "03:00", "Asia/Shanghai", False),
        ("02:30", "0 3 * * 1", "Europe/Berlin", False),
        ("01:59", "03:00", "Europe/Berlin", False),
    ],
)
def test_dst_collision(a: str, b: str, zone: str, collides: bool) -> None:
    """A start in the skipped hour runs at its end, meeting a start there (or another moved one)."""
    found = dst_collision(parse_start(a), parse_start(b), zone)
    assert (found is not None) is collides
