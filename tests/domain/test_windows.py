"""Window starts, DST walks, skip dates, catch-up and operator overrides (pure, fixed instants)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from tidal.domain.windows import (
    Action,
    Controls,
    Handled,
    Hold,
    WindowSpecError,
    WindowTimes,
    cron_of,
    decide,
    next_start,
    next_start_of,
    start_in_force,
    starts_between,
)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def one(tz: str, start: str, **kw: object) -> WindowTimes:
    return WindowTimes(time_zone=tz, starts=(("w", start),), **kw)  # type: ignore[arg-type]


def walk(times: WindowTimes, after: datetime, n: int) -> list[datetime]:
    out, now = [], after
    for _ in range(n):
        s = next_start(times, now)
        assert s is not None
        out.append(s.at)
        now = s.at
    return out


DAY_NIGHT = (("day", "07:00"), ("night", "23:00"))


# --- start parsing ---------------------------------------------------------------------------


def test_hhmm_and_cron_starts_become_cron_expressions() -> None:
    """HH:MM becomes a daily cron; a 5-field cron (optionally prefixed 'cron:') is kept."""
    assert cron_of("23:00") == "0 23 * * *"
    assert cron_of("7:05") == "5 7 * * *"
    assert cron_of("0 23 * * 1-5") == "0 23 * * 1-5"
    assert cron_of("cron: 0 23 * * 1-5") == "0 23 * * 1-5"


@pytest.mark.parametrize("bad", ["24:00", "12:60", "noon", "* * *", "0 0 * * * *"])
def test_bad_start_is_a_clear_error(bad: str) -> None:
    """A start that is neither HH:MM nor 5-field cron raises WindowSpecError naming it."""
    with pytest.raises(WindowSpecError, match="start"):
        cron_of(bad)


# --- DST walks -------------------------------------------------------------------------------


def test_berlin_spring_forward_runs_nonexistent_start_at_transition() -> None:
    """Europe/Berlin 2026-03-29: 02:30 does not exist; it runs at 03:00 CEST (01:00 UTC), once."""
    got = walk(one("Europe/Berlin", "02:30"), utc(2026, 3, 27, 12), 4)
    assert got == [
        utc(2026, 3, 28, 1, 30),
        utc(2026, 3, 29, 1, 0),
        utc(2026, 3, 30, 0, 30),
        utc(2026, 3, 31, 0, 30),
    ]


def test_berlin_autumn_ambiguous_start_runs_once_at_first_occurrence() -> None:
    """Europe/Berlin 2026-10-25: 02:30 happens twice; it runs once, at 02:30 CEST (00:30 UTC)."""
    got = walk(one("Europe/Berlin", "02:30"), utc(2026, 10, 23, 12), 4)
    assert got == [
        utc(2026, 10, 24, 0, 30),
        utc(2026, 10, 25, 0, 30),
        utc(2026, 10, 26, 1, 30),
        utc(2026, 10, 27, 1, 30),
    ]


def test_berlin_autumn_second_pass_of_ambiguous_hour_keeps_first_run_in_force() -> None:
    """During the repeated hour, the window in force is the first-occurrence start, no new start."""
    times = one("Europe/Berlin", "02:30")
    second_pass = utc(2026, 10, 25, 1, 45)  # 02:45 CET, after 02:30 CET
    in_force = start_in_force(times, second_pass)
    assert in_force is not None and in_force.at == utc(2026, 10, 25, 0, 30)
    assert starts_between(times, utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 2, 0)) == []


def test_berlin_nonexistent_starts_collapse_to_one_run() -> None:
    """A cron every 15 min in the missing hour (02:xx) yields a single run at the transition."""
    times = one("Europe/Berlin", "*/15 2 * * *")
    got = starts_between(times, utc(2026, 3, 28, 23), utc(2026, 3, 29, 3))
    assert [s.at for s in got] == [utc(2026, 3, 29, 1, 0)]


def test_new_york_spring_forward_and_fall_back() -> None:
    """America/New_York 2026: 02:30 on Mar 8 runs at 03:00 EDT; 01:30 on Nov 1 runs once (EDT)."""
    spring = walk(one("America/New_York", "02:30"), utc(2026, 3, 7, 0), 3)
    assert spring == [utc(2026, 3, 7, 7, 30), utc(2026, 3, 8, 7, 0), utc(2026, 3, 9, 6, 30)]
    autumn = walk(one("America/New_York", "01:30"), utc(2026, 10, 31, 0), 3)
    assert autumn == [utc(2026, 10, 31, 5, 30), utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)]


def test_zone_without_dst_is_a_fixed_offset_all_year() -> None:
    """Asia/Shanghai: 23:00 local is 15:00 UTC on every day, across Europe's DST dates too."""
    times = one("Asia/Shanghai", "23:00")
    for day in (date(2026, 3, 28), date(2026, 3, 29), date(2026, 10, 25), date(2026, 11, 1)):
        s = next_start(times, datetime(day.year, day.month, day.day, tzinfo=UTC))
        assert s is not None and s.at == datetime(day.year, day.month, day.day, 15, tzinfo=UTC)


def test_window_in_force_is_latest_start_at_or_before_now() -> None:
    """Day/night: at 03:00 local the night window (23:00 yesterday) is in force; at 07:00 day."""
    times = WindowTimes("Asia/Shanghai", DAY_NIGHT)
    s = start_in_force(times, utc(2026, 6, 1, 19))  # 03:00 local Jun 2
    assert s is not None and (s.window, s.at) == ("night", utc(2026, 6, 1, 15))
    s = start_in_force(times, utc(2026, 6, 1, 23))  # 07:00 local Jun 2, exactly at the start
    assert s is not None and (s.window, s.at) == ("day", utc(2026, 6, 1, 23))
    nxt = next_start(times, utc(2026, 6, 1, 23))
    assert nxt is not None and (nxt.window, nxt.at) == ("night", utc(2026, 6, 2, 15))
    only_day = next_start_of(times, "day", utc(2026, 6, 1, 23))
    assert only_day is not None and only_day.at == utc(2026, 6, 2, 23)


def test_skip_dates_start_nothing_and_keep_window_in_force() -> None:
    """On a skipped local date no window starts; the window from the day before stays in force."""
    times = WindowTimes("Asia/Shanghai", DAY_NIGHT, skip_dates=frozenset({date(2026, 12, 25)}))
    noon_25 = utc(2026, 12, 25, 4)
    s = start_in_force(times, noon_25)
    assert s is not None and (s.window, s.local) == ("night", datetime(2026, 12, 24, 23))
    nxt = next_start(times, noon_25)
    assert nxt is not None and (nxt.window, nxt.local) == ("day", datetime(2026, 12, 26, 7))


def test_weekday_cron_finds_friday_start_on_monday_morning() -> None:
    """'0 23 * * 1-5' seen on Monday 06:00 local: in force is Friday 23:00 (the weekend skipped)."""
    times = one("Europe/Berlin", "0 23 * * 1-5")
    s = start_in_force(times, datetime(2026, 6, 8, 4, tzinfo=UTC))  # Mon 06:00 CEST
    assert s is not None and s.local == datetime(2026, 6, 5, 23)


# --- catch-up and overrides ------------------------------------------------------------------

TIMES = WindowTimes("Asia/Shanghai", DAY_NIGHT, catch_up_window=timedelta(minutes=30))
NIGHT_JUN1 = utc(2026, 6, 1, 15)  # 23:00 local
DAY_JUN1 = utc(2026, 5, 31, 23)  # 07:00 local Jun 1


def test_due_start_runs() -> None:
    """At the start instant with the previous window handled, the window runs."""
    d = decide(TIMES, NIGHT_JUN1, Handled("day", DAY_JUN1))
    assert (d.action, d.start and d.start.window) == (Action.RUN, "night")


def test_handled_start_does_nothing() -> None:
    """Once the window in force is handled, deciding again does nothing (exactly once)."""
    d = decide(TIMES, NIGHT_JUN1 + timedelta(minutes=5), Handled("night", NIGHT_JUN1))
    assert d.action is Action.NOTHING


def test_catch_up_inside_window_runs_and_outside_is_missed() -> None:
    """29 min late runs (catch-up); 31 min late is recorded as missed."""
    last = Handled("day", DAY_JUN1)
    assert decide(TIMES, NIGHT_JUN1 + timedelta(minutes=29), last).action is Action.RUN
    late = decide(TIMES, NIGHT_JUN1 + timedelta(minutes=31), last)
    assert late.action is Action.MISSED and late.late_by == timedelta(minutes=31)


def test_down_for_three_windows_catches_up_only_the_latest() -> None:
    """After missing three starts, only the latest (in force) is considered, once."""
    last = Handled("night", utc(2026, 5, 30, 15))
    now = NIGHT_JUN1 + timedelta(minutes=10)
    d = decide(TIMES, now, last)
    assert d.action is Action.RUN and d.start is not None and d.start.at == NIGHT_JUN1
    assert decide(TIMES, now, Handled("night", NIGHT_JUN1)).action is Action.NOTHING


def test_suspended_never_runs() -> None:
    """Suspended in the spec or by the operator: nothing runs."""
    assert decide(TIMES, NIGHT_JUN1, None, suspended_in_spec=True).action is Action.SUSPENDED
    assert decide(TIMES, NIGHT_JUN1, None, Controls(suspended=True)).action is Action.SUSPENDED


def test_skip_skips_only_that_start() -> None:
    """A skip for tonight's start yields SKIP tonight; tomorrow's day start runs normally."""
    controls = Controls(skip_start=NIGHT_JUN1)
    assert decide(TIMES, NIGHT_JUN1, Handled("day", DAY_JUN1), controls).action is Action.SKIP
    nxt_day = utc(2026, 6, 1, 23)
    d = decide(TIMES, nxt_day, Handled("night", NIGHT_JUN1), controls)
    assert d.action is Action.RUN and d.start is not None and d.start.window == "day"


def test_hold_keeps_window_in_force_then_resumes() -> None:
    """Hold day until 03:00: night at 23:00 does nothing; at 03:00 night is due from then."""
    since = utc(2026, 6, 1, 12)  # 20:00 local, day in force and handled
    hold = Hold(window="day", until=utc(2026, 6, 1, 19), since=since)  # until 03:00 local
    controls = Controls(hold=hold)
    assert decide(TIMES, NIGHT_JUN1, Handled("day", DAY_JUN1), controls).action is Action.NOTHING
    d = decide(TIMES, hold.until + timedelta(minutes=1), Handled("day", DAY_JUN1), controls)
    assert d.action is Action.RUN and d.start is not None and d.start.window == "night"
    assert (
        decide(TIMES, hold.until + timedelta(hours=1), Handled("day", DAY_JUN1), controls).action
        is Action.MISSED
    )


def test_hold_of_other_window_runs_it_now_once() -> None:
    """Holding night while day is in force runs night now, once; at expiry day is due again."""
    since = utc(2026, 6, 1, 4)
    hold = Hold(window="night", until=utc(2026, 6, 1, 8), since=since)
    controls = Controls(hold=hold)
    d = decide(TIMES, since, Handled("day", DAY_JUN1), controls)
    assert d.action is Action.RUN and d.start is not None and d.start.window == "night"
    later = since + timedelta(minutes=5)
    assert decide(TIMES, later, Handled("night", since), controls).action is Action.NOTHING
    at_end = decide(TIMES, hold.until, Handled("night", since), controls)
    assert at_end.action is Action.RUN and at_end.start is not None
    assert at_end.start.window == "day"


def test_manual_run_after_start_is_not_reverted() -> None:
    """A later manual run of another window is respected: the scheduled one is not re-run."""
    manual = NIGHT_JUN1 + timedelta(minutes=5)
    assert decide(TIMES, manual + timedelta(minutes=1), Handled("day", manual)).action is (
        Action.NOTHING
    )


@pytest.mark.parametrize("late", [timedelta(0), timedelta(seconds=3), timedelta(seconds=59)])
def test_a_start_fired_within_its_minute_is_due_not_a_catch_up(late: timedelta) -> None:
    """A trigger that fires a few seconds after the start is on time: reason 'due'."""
    d = decide(TIMES, NIGHT_JUN1 + late, Handled("day", DAY_JUN1))
    assert (d.action, d.reason) == (Action.RUN, "due")


def test_a_start_a_minute_late_is_a_catch_up() -> None:
    """From a minute late on (window starts have one-minute resolution) it is a catch-up."""
    d = decide(TIMES, NIGHT_JUN1 + timedelta(minutes=1, seconds=1), Handled("day", DAY_JUN1))
    assert (d.action, d.reason) == (Action.RUN, "catch-up")
