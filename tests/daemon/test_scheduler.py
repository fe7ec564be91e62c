"""APScheduler wiring: the window trigger agrees with domain/windows.py; CronTrigger does not
on DST days (why the custom trigger exists); job defaults; offset clocks."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from apscheduler.triggers.cron import CronTrigger

from tidal.daemon.scheduler import Dispatcher, WindowScheduler, WindowTrigger
from tidal.domain.clock import FakeClock
from tidal.domain.windows import WindowTimes, next_start_of

BERLIN = WindowTimes("Europe/Berlin", (("night", "02:30"), ("day", "07:00")))


def fires(
    trigger: object, start: datetime, n: int, clock: FakeClock | None = None
) -> list[datetime]:
    out: list[datetime] = []
    prev, now = None, start
    for _ in range(n):
        if clock is not None:
            clock.set(now)
        nxt = trigger.get_next_fire_time(prev, now)  # type: ignore[attr-defined]
        out.append(nxt.astimezone(UTC))
        prev = now = nxt
    return out


def test_window_trigger_matches_domain_windows_across_dst() -> None:
    """Walking a year of Berlin nights, the trigger fires exactly at windows.py's starts."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    clock = FakeClock(start)
    trigger = WindowTrigger(BERLIN, "night", clock)
    expected, after = [], start
    for _ in range(366):
        s = next_start_of(BERLIN, "night", after)
        assert s is not None
        expected.append(s.at)
        after = s.at
    prev, now, got = None, start, []
    for _ in range(366):
        clock.set(now)
        nxt = trigger.get_next_fire_time(prev, now)
        assert nxt is not None
        got.append(nxt.astimezone(UTC))
        prev = now = nxt
    assert got == expected


def test_crontrigger_diverges_on_dst_days() -> None:
    """APScheduler's CronTrigger runs the autumn 02:30 twice and the spring one at 03:30."""
    tz = ZoneInfo("Europe/Berlin")
    cron = CronTrigger(hour=2, minute=30, timezone=tz)
    autumn = fires(cron, datetime(2026, 10, 24, 12, tzinfo=UTC), 3)
    assert autumn[:2] == [
        datetime(2026, 10, 25, 0, 30, tzinfo=UTC),
        datetime(2026, 10, 25, 1, 30, tzinfo=UTC),
    ]  # twice
    spring = fires(cron, datetime(2026, 3, 28, 12, tzinfo=UTC), 1)
    assert spring == [datetime(2026, 3, 29, 1, 30, tzinfo=UTC)]  # 03:30 CEST, not 03:00
    clock = FakeClock(datetime(2026, 10, 24, 12, tzinfo=UTC))
    ours = WindowTrigger(BERLIN, "night", clock)
    assert fires(ours, clock.now(), 2, clock) == [
        datetime(2026, 10, 25, 0, 30, tzinfo=UTC),
        datetime(2026, 10, 26, 1, 30, tzinfo=UTC),
    ]


def test_offset_clock_fires_at_the_clocks_instant() -> None:
    """When the daemon's clock runs ahead of wall time, fire times are mapped back to wall time."""
    wall = datetime(2026, 6, 1, 10, tzinfo=UTC)
    clock = FakeClock(datetime(2026, 6, 1, 0, 29, tzinfo=UTC))  # 02:29 CEST: a minute to go
    nxt = WindowTrigger(BERLIN, "night", clock).get_next_fire_time(None, wall)
    assert nxt == wall + timedelta(minutes=1)


def test_jobs_per_window_with_explicit_defaults() -> None:
    """One job per window, coalesce, one instance, explicit misfire grace; removal drops them."""
    clock = FakeClock(datetime(2026, 6, 1, tzinfo=UTC))
    sched = WindowScheduler(
        clock, lambda s, w: None, misfire_grace_seconds=300, resync_seconds=15, resync=lambda: None
    )
    sched.set_schedule("team-a", BERLIN)
    jobs = {j.id: j for j in sched.scheduler.get_jobs()}
    assert set(jobs) == {"team-a/night", "team-a/day"}
    defaults = sched.scheduler._job_defaults
    assert defaults == {"coalesce": True, "max_instances": 1, "misfire_grace_time": 300}
    sched.remove_schedule("team-a")
    assert sched.scheduler.get_jobs() == []


def test_dispatcher_runs_one_schedule_at_a_time_and_limits_across_schedules() -> None:
    """Limit 1: two schedules queue instead of overlapping; a schedule never runs twice at once."""
    running: list[str] = []
    overlaps: list[tuple[str, ...]] = []
    order: list[str] = []
    lock = threading.Lock()
    release = threading.Event()

    def work(schedule: str, reason: str) -> None:
        with lock:
            running.append(schedule)
            if len(running) > 1:
                overlaps.append(tuple(running))
        release.wait(2)
        with lock:
            running.remove(schedule)
            order.append(schedule)

    dispatcher = Dispatcher(work, limit=1)
    dispatcher.start()
    try:
        for name in ("a", "b", "a", "a"):
            dispatcher.submit(name, "test")
        release.set()
        assert dispatcher.wait_idle(5)
    finally:
        dispatcher.stop(1)
    assert overlaps == []
    assert sorted(order) == ["a", "a", "b"] or sorted(order) == ["a", "b"]
    assert order.count("b") == 1


def test_dispatcher_grants_slots_by_priority_then_arrival_and_says_who_waits() -> None:
    """With the one slot taken, queued schedules start higher priority first, then in the
    order they were queued; meanwhile waiting() names them with the time they were queued."""
    clock = FakeClock(datetime(2026, 12, 3, 23, 0, tzinfo=UTC))
    order: list[str] = []
    gate = threading.Event()
    priorities = {"low-1": 0, "low-2": 0, "high": 5, "first": 0}

    def work(schedule: str, reason: str) -> None:
        if schedule == "first":
            gate.wait(5)
        order.append(schedule)

    dispatcher = Dispatcher(work, limit=1, priority_of=priorities.__getitem__, clock=clock)
    dispatcher.start()
    try:
        dispatcher.submit("first", "window:night")
        deadline = time.monotonic() + 5
        while dispatcher.busy() != {"first"} and time.monotonic() < deadline:
            time.sleep(0.01)
        for name in ("low-1", "low-2", "high"):
            dispatcher.submit(name, "window:night")
            clock.advance(timedelta(seconds=1))
        t0 = datetime(2026, 12, 3, 23, 0, tzinfo=UTC)
        assert dispatcher.waiting() == {
            "low-1": t0,
            "low-2": t0 + timedelta(seconds=1),
            "high": t0 + timedelta(seconds=2),
        }
        gate.set()
        assert dispatcher.wait_idle(5)
    finally:
        gate.set()
        dispatcher.stop(1)
    assert order == ["first", "high", "low-1", "low-2"]
    assert dispatcher.waiting() == {}
