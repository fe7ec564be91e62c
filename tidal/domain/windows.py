"""When windows start: local wall-clock starts mapped to instants, with DST and operator overrides.

Pure: every function takes `now` (an aware datetime) and returns aware UTC instants.

DST semantics (documented contract, tested in tests/domain/test_windows.py):
- a local start that does not exist (spring forward) runs at the first valid instant after it,
  i.e. at the transition (02:30 in Europe/Berlin on the spring day runs at 03:00 CEST);
- an ambiguous local start (autumn fall back) runs once, at its first occurrence (fold=0);
- several nonexistent starts that collapse onto the same instant run once.
`skipDates` are local dates on which no window starts; the window in force stays in force.

Window starts are "HH:MM" or a 5-field cron expression, both in local wall-clock time. Local
occurrences are enumerated on naive local datetimes (croniter) and then mapped to instants; the
mapping is non-decreasing, so order is preserved.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from enum import Enum
from typing import Protocol
from zoneinfo import ZoneInfo

from croniter import croniter

from tidal.domain.cron import START_HINT, cron_expression
from tidal.domain.run_control import RunControl

# Wall clock and UTC never differ by more than this around a transition (largest offset change
# is 2 h; margin kept generous so enumeration never starts too late).
_DST_SLACK = timedelta(hours=3)
# How far to look back/forward for a start before giving up (a yearly cron plus skip dates).
_HORIZON = timedelta(days=800)


class WindowSpecError(ValueError):
    """A window start that is neither HH:MM nor a 5-field cron expression."""


def cron_of(start: str) -> str:
    """The 5-field cron expression (local time) for a window's `start`, read as loading reads
    it (tidal.domain.cron.cron_expression)."""
    try:
        text = cron_expression(start)
    except ValueError as exc:
        raise WindowSpecError(f"start {exc}") from None
    if not croniter.is_valid(text):
        raise WindowSpecError(f"start {start!r} is not a valid cron expression; {START_HINT}")
    return text


def _is_nonexistent(local: datetime, tz: ZoneInfo) -> bool:
    aware = local.replace(tzinfo=tz)
    return aware.astimezone(UTC).astimezone(tz).replace(tzinfo=None) != local


def local_to_instant(local: datetime, tz: ZoneInfo) -> datetime:
    """The UTC instant at which a naive local wall-clock start runs, by the DST rules above."""
    if local.tzinfo is not None:
        raise ValueError("local_to_instant takes a naive local datetime")
    if not _is_nonexistent(local, tz):
        return local.replace(tzinfo=tz, fold=0).astimezone(UTC)
    # In a gap: fold=1 maps with the post-transition offset (an instant before the transition),
    # fold=0 with the pre-transition one (after it). The transition lies between: bisect seconds.
    low = local.replace(tzinfo=tz, fold=1).astimezone(UTC)
    high = local.replace(tzinfo=tz, fold=0).astimezone(UTC)
    if low > high:
        low, high = high, low
    lo_s, hi_s = 0, int((high - low).total_seconds())
    while lo_s < hi_s:
        mid = (lo_s + hi_s) // 2
        wall = (low + timedelta(seconds=mid)).astimezone(tz).replace(tzinfo=None)
        if wall >= local:
            hi_s = mid
        else:
            lo_s = mid + 1
    return low + timedelta(seconds=lo_s)


@dataclass(frozen=True, order=True)
class WindowStart:
    """One start of one window: the instant it runs (UTC) and its nominal local wall time."""

    at: datetime
    window: str
    local: datetime  # naive local wall-clock time as written in the schedule


@dataclass(frozen=True)
class WindowTimes:
    """What windows.py needs of a schedule: zone, skip dates, and each window's start."""

    time_zone: str
    starts: tuple[tuple[str, str], ...]  # (window name, start spec)
    skip_dates: frozenset[date] = frozenset()
    catch_up_window: timedelta = timedelta(minutes=30)

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.time_zone)


class _WindowLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def start(self) -> str: ...


class _SpecLike(Protocol):
    @property
    def time_zone(self) -> str: ...
    @property
    def skip_dates(self) -> Sequence[date]: ...
    @property
    def catch_up_window(self) -> timedelta: ...
    @property
    def windows(self) -> Sequence[_WindowLike]: ...


class _ScheduleLike(Protocol):
    @property
    def spec(self) -> _SpecLike: ...


def times_of(schedule: _ScheduleLike) -> WindowTimes:
    """The window timing of a TidalSchedule model."""
    spec = schedule.spec
    return WindowTimes(
        time_zone=spec.time_zone,
        starts=tuple((w.name, w.start) for w in spec.windows),
        skip_dates=frozenset(spec.skip_dates),
        catch_up_window=spec.catch_up_window,
    )


# A walk over one window's starts from a time: _forward (after it) or _backward (up to it).
Walk = Callable[[str, ZoneInfo, frozenset[date], datetime, str], Iterator[WindowStart]]


def _forward(
    cron: str, tz: ZoneInfo, skip: frozenset[date], after: datetime, window: str
) -> Iterator[WindowStart]:
    """Starts of one window with instant strictly after `after`, in order (deduplicated)."""
    local_from = after.astimezone(tz).replace(tzinfo=None) - _DST_SLACK
    it = croniter(cron, local_from)
    last: datetime | None = None
    limit = after + _HORIZON
    while True:
        local = it.get_next(datetime)
        at = local_to_instant(local, tz)
        if at > limit:
            return
        if local.date() in skip or at <= after or at == last:
            continue
        last = at
        yield WindowStart(at=at, window=window, local=local)


def _backward(
    cron: str, tz: ZoneInfo, skip: frozenset[date], until: datetime, window: str
) -> Iterator[WindowStart]:
    """Starts of one window with instant at or before `until`, latest first (deduplicated)."""
    local_from = until.astimezone(tz).replace(tzinfo=None) + _DST_SLACK
    it = croniter(cron, local_from)
    last: datetime | None = None
    limit = until - _HORIZON
    while True:
        local = it.get_prev(datetime)
        at = local_to_instant(local, tz)
        if at < limit:
            return
        if local.date() in skip or at > until or at == last:
            continue
        # Two nonexistent locals collapse onto one instant: keep the earliest nominal time.
        last = at
        yield WindowStart(at=at, window=window, local=local)


def next_start_of(times: WindowTimes, window: str, after: datetime) -> WindowStart | None:
    """The first start of `window` strictly after `after`."""
    tz = times.tz
    for name, start in times.starts:
        if name == window:
            return next(_forward(cron_of(start), tz, times.skip_dates, after, name), None)
    raise KeyError(window)


def _nearest_each(times: WindowTimes, now: datetime, walk: Walk) -> list[WindowStart]:
    """Each window's first start met walking from `now` (`_forward` or `_backward`)."""
    return [
        s
        for name, start in times.starts
        if (s := next(walk(cron_of(start), times.tz, times.skip_dates, now, name), None))
    ]


def next_start(times: WindowTimes, now: datetime) -> WindowStart | None:
    """The earliest start of any window strictly after `now`."""
    return min(_nearest_each(times, now, _forward), default=None)


def start_in_force(times: WindowTimes, now: datetime) -> WindowStart | None:
    """The latest start of any window at or before `now`: the window that should be in force."""
    # Two windows at the same instant cannot pass validation; break ties by name for determinism.
    return max(_nearest_each(times, now, _backward), default=None)


def starts_between(times: WindowTimes, after: datetime, until: datetime) -> list[WindowStart]:
    """Every start of every window with after < at <= until, in order."""
    tz = times.tz
    out: list[WindowStart] = []
    for name, start in times.starts:
        for s in _forward(cron_of(start), tz, times.skip_dates, after, name):
            if s.at > until:
                break
            out.append(s)
    return sorted(out)


# --- catch-up and operator overrides -------------------------------------------------------


@dataclass(frozen=True)
class Hold:
    """Keep `window` in force from `since` until `until`, then resume the normal schedule."""

    window: str
    until: datetime
    since: datetime


@dataclass(frozen=True)
class Controls:
    """Operator controls persisted in the state: suspend, skip the next start, hold a window."""

    suspended: bool = False
    skip_start: datetime | None = None  # the instant of the one start to skip
    hold: Hold | None = None
    run: RunControl | None = None  # pause / abort / promote of the switch in flight
    retry_run: str | None = None  # `retry` through the daemon: the failed run to run again


@dataclass(frozen=True)
class Handled:
    """The last start the daemon dealt with (ran, missed or skipped), from the state."""

    window: str
    at: datetime


class Action(Enum):
    RUN = "run"  # carry out `start` now
    MISSED = "missed"  # record `start` as missed (too late for catchUpWindow)
    SKIP = "skip"  # operator asked to skip this start: record it as skipped
    NOTHING = "nothing"  # in force already handled, or no window has started yet
    SUSPENDED = "suspended"


# Starts have one-minute resolution: a trigger firing within the start's minute is on time.
ON_TIME = timedelta(minutes=1)


@dataclass(frozen=True)
class Decision:
    action: Action
    start: WindowStart | None
    reason: str
    late_by: timedelta = timedelta(0)


def _during_hold(times: WindowTimes, hold: Hold, last: Handled | None) -> Decision:
    """While a hold is on: its window is run, unless it is in force already (handled since
    the hold began, or put in force by the normal schedule)."""
    local = hold.since.astimezone(times.tz).replace(tzinfo=None)
    held = WindowStart(at=hold.since, window=hold.window, local=local)
    if last is not None and last.window == hold.window and last.at >= hold.since:
        return Decision(Action.NOTHING, held, "held window already in force")
    if last is not None and last.window == hold.window:
        # The held window is what the normal schedule already put in force.
        scheduled = start_in_force(times, hold.since)
        if scheduled and scheduled.window == hold.window and last.at >= scheduled.at:
            return Decision(Action.NOTHING, held, "held window already in force")
    return Decision(Action.RUN, held, "hold")


def decide(
    times: WindowTimes,
    now: datetime,
    last: Handled | None,
    controls: Controls = Controls(),
    *,
    suspended_in_spec: bool = False,
) -> Decision:
    """What to do about the window that should be in force at `now`.

    A start is handled when the last handled start is the same window at or after it. A hold
    puts its window in force from its `since`; starts it covered become due again when it ends
    (due from `until`, so catchUpWindow counts from the end of the hold).
    """
    if suspended_in_spec or controls.suspended:
        return Decision(Action.SUSPENDED, None, "suspended")
    hold = controls.hold
    if hold is not None and hold.since <= now < hold.until:
        return _during_hold(times, hold, last)
    start = start_in_force(times, now)
    if start is None:
        return Decision(Action.NOTHING, None, "no window has started yet")
    # a start the hold covered is due from its end, and handled by a run since the hold began
    covered = hold if hold is not None and start.at < hold.until <= now else None
    due = max(start.at, covered.until) if covered is not None else start.at
    handled = _handled(start, last, covered)
    if handled is not None:
        return handled
    if controls.skip_start is not None and controls.skip_start == start.at:
        return Decision(Action.SKIP, start, "skip requested")
    late = now - due
    if late <= times.catch_up_window:
        return Decision(Action.RUN, start, "due" if late < ON_TIME else "catch-up", late)
    return Decision(Action.MISSED, start, "start older than catchUpWindow", late)


def _handled(start: WindowStart, last: Handled | None, covered: Hold | None) -> Decision | None:
    """Nothing to do when the start was handled already, or a later run was (a manual run
    after the start is operator intent: never silently reverted); else None."""
    if last is None:
        return None
    threshold = min(start.at, covered.since) if covered is not None else start.at
    if last.window == start.window and last.at >= threshold:
        return Decision(Action.NOTHING, start, "already handled")
    if last.at > start.at and covered is None:
        return Decision(Action.NOTHING, start, "a later run was already handled")
    return None
