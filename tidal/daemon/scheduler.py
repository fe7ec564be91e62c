"""APScheduler wiring: one job per schedule window; the job only enqueues, workers run switches.

Why a custom trigger instead of CronTrigger: APScheduler 3.11's CronTrigger runs an ambiguous
autumn start twice (once per UTC offset) and runs a nonexistent spring start an hour late (at
the old offset), and it cannot express skipDates. `WindowTrigger` asks tidal.domain.windows, so
the scheduler and the catch-up logic share one definition of "when" (tests compare both).
It also maps the daemon's Clock onto APScheduler's wall time (an offset or accelerated clock,
e.g. in the demo, fires at the clock's instant).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_MAX_INSTANCES, EVENT_JOB_MISSED
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger

from tidal.domain.clock import Clock
from tidal.domain.windows import WindowTimes, next_start_of
from tidal.karmada.errors import KarmadaError

log = structlog.get_logger("tidal.daemon.scheduler")


@dataclass(frozen=True)
class _Queued:
    reason: str
    priority: int
    seq: int
    since: datetime | None

    @property
    def order(self) -> tuple[int, int]:
        return (-self.priority, self.seq)


class WindowTrigger(BaseTrigger):  # type: ignore[misc]
    """Fires at each start of one window, as tidal.domain.windows defines starts."""

    def __init__(self, times: WindowTimes, window: str, clock: Clock) -> None:
        self.times, self.window, self.clock = times, window, clock

    def get_next_fire_time(
        self, previous_fire_time: datetime | None, now: datetime
    ) -> datetime | None:
        shift = self.clock.now() - now  # the daemon's clock minus APScheduler's wall time
        after = now + shift - timedelta(microseconds=1)
        if previous_fire_time is not None:
            after = max(after, previous_fire_time + shift)
        start = next_start_of(self.times, self.window, after)
        return None if start is None else (start.at - shift).astimezone(now.tzinfo or UTC)

    def __str__(self) -> str:
        return f"window[{self.window} {self.times.time_zone}]"


class Dispatcher:
    """Runs `work(schedule)` on worker threads: one at a time per schedule, at most `limit`
    schedules at once; a request for a busy or already queued schedule coalesces into one
    more pass after the current one (the work decides from state, so one pass suffices).

    A free slot goes to the queued schedule of highest `priority_of`, then to the one queued
    first; `waiting()` tells which schedules wait for a slot, since when (on `clock`)."""

    def __init__(
        self,
        work: Callable[[str, str], None],
        limit: int = 1,
        on_error: Callable[[str, Exception], None] | None = None,
        *,
        priority_of: Callable[[str], int] | None = None,
        clock: Clock | None = None,
        on_change: Callable[[], None] | None = None,
        waits_for_switch: Callable[[str, str], bool] | None = None,
    ) -> None:
        self.work = work
        self.limit = limit
        self.on_error = on_error
        self.priority_of = priority_of or (lambda _name: 0)
        self.clock = clock
        self.on_change = on_change  # the queue changed (metrics); called without the lock
        # (schedule, reason) -> whether that queued pass would start or resume a switch; only
        # those are reported as waiting (a routine resync behind busy slots is no news)
        self.waits_for_switch = waits_for_switch or (lambda _name, _reason: True)
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._queued: dict[str, _Queued] = {}  # schedule -> queued but not started
        self._seq = 0
        self._busy: set[str] = set()
        self._again: dict[str, str] = {}
        self._threads: list[threading.Thread] = []
        self._stopping = False
        self._idle = threading.Condition(self._lock)

    def start(self) -> None:
        for i in range(self.limit):
            t = threading.Thread(target=self._loop, name=f"tidal-switch-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def submit(self, schedule: str, reason: str) -> None:
        with self._lock:
            if schedule in self._busy:
                self._again.setdefault(schedule, reason)
                return
            if schedule in self._queued:
                return
            self._enqueue(schedule, reason)
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception as exc:  # a metric never stops the queue
                log.warning("observer_failed", error=str(exc))

    def _enqueue(self, schedule: str, reason: str) -> None:
        """Queue one pass (the lock is held)."""
        try:
            priority = int(self.priority_of(schedule))
        except Exception:  # an unknown schedule (just removed) queues at the default
            priority = 0
        self._seq += 1
        since = self.clock.now() if self.clock is not None else None
        self._queued[schedule] = _Queued(reason, priority, self._seq, since)
        self._wake.notify()

    def _next(self) -> tuple[str, str] | None:
        """Wait for a queued schedule and take the first in order (None: stopping)."""
        with self._lock:
            while not self._queued and not self._stopping:
                self._wake.wait()
            if self._stopping:
                return None
            schedule = min(self._queued, key=lambda n: self._queued[n].order)
            reason = self._queued.pop(schedule).reason
            self._busy.add(schedule)
            return schedule, reason

    def _loop(self) -> None:
        while True:
            taken = self._next()
            if taken is None:
                return
            schedule, reason = taken
            self._changed()
            try:
                self.work(schedule, reason)
            except Exception as exc:  # a failed pass must not kill the worker
                self._report(schedule, exc)
            finally:
                with self._lock:
                    self._busy.discard(schedule)
                    again = self._again.pop(schedule, None)
                    if again is not None and schedule not in self._queued:
                        self._enqueue(schedule, again)
                    self._idle.notify_all()

    def waiting(self) -> dict[str, datetime]:
        """Schedules whose switch is queued while every slot is taken -> since when."""
        with self._lock:
            if len(self._busy) < self.limit:
                return {}
            queued = {
                name: (q.since, q.reason) for name, q in self._queued.items() if q.since is not None
            }
        out: dict[str, datetime] = {}
        for name, (since, reason) in queued.items():
            try:
                if self.waits_for_switch(name, reason):
                    out[name] = since
            except Exception:  # a status question never breaks the queue
                out[name] = since
        return out

    def _report(self, schedule: str, exc: Exception) -> None:
        """An API error is one line with its class (the next pass retries); anything else is a
        bug and keeps its traceback. Either is counted."""
        if isinstance(exc, KarmadaError):
            log.error(
                "switch_worker_error",
                schedule=schedule,
                error=str(exc)[:2000],
                error_class=type(exc).__name__,
            )
        else:
            log.exception(
                "switch_worker_error",
                schedule=schedule,
                error=str(exc)[:2000],
                error_class=type(exc).__name__,
            )
        if self.on_error is not None:
            try:
                self.on_error(schedule, exc)
            except Exception as hook_error:  # a metric never kills the worker
                log.warning("observer_failed", error=str(hook_error))

    def busy(self) -> set[str]:
        with self._lock:
            return set(self._busy)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is queued or running (tests, shutdown)."""
        with self._lock:
            return self._idle.wait_for(
                lambda: not self._busy and not self._queued and not self._again, timeout
            )

    def stop(self, timeout: float | None = None) -> None:
        with self._lock:
            self._stopping = True
            self._wake.notify_all()
        for t in self._threads:
            t.join(timeout)


class WindowScheduler:
    """The BackgroundScheduler with one job per (schedule, window), plus a periodic resync."""

    def __init__(
        self,
        clock: Clock,
        fire: Callable[[str, str], None],
        *,
        misfire_grace_seconds: float,
        resync_seconds: float,
        resync: Callable[[], None],
        on_event: Callable[[Any], None] | None = None,
    ) -> None:
        self.clock = clock
        self.fire = fire
        self.scheduler = BackgroundScheduler(
            timezone=UTC,
            # Jobs only enqueue, so a small pool keeps the scheduler responsive.
            executors={"default": ThreadPoolExecutor(2)},
            job_defaults={
                "coalesce": True,
                "max_instances": 1,
                "misfire_grace_time": int(misfire_grace_seconds),
            },
        )
        if on_event is not None:
            self.scheduler.add_listener(
                on_event, EVENT_JOB_ERROR | EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES
            )
        self._resync = resync
        self._resync_seconds = resync_seconds
        self._times: dict[str, WindowTimes] = {}

    def start(self) -> None:
        self.scheduler.start()
        self.scheduler.add_job(
            self._resync,
            "interval",
            seconds=self._resync_seconds,
            id="resync",
            replace_existing=True,
        )

    def running(self) -> bool:
        return bool(self.scheduler.running)

    def set_schedule(self, name: str, times: WindowTimes) -> None:
        """Add or replace the jobs of one schedule."""
        old = self._times.get(name)
        if old == times:
            return
        self.remove_schedule(name)
        self._times[name] = times
        for window, _start in times.starts:
            self.scheduler.add_job(
                self.fire,
                WindowTrigger(times, window, self.clock),
                args=(name, window),
                id=f"{name}/{window}",
                name=f"{name}/{window}",
                replace_existing=True,
            )

    def remove_schedule(self, name: str) -> None:
        times = self._times.pop(name, None)
        if times is None:
            return
        for window, _start in times.starts:
            job_id = f"{name}/{window}"
            if self.scheduler.get_job(job_id) is not None:
                self.scheduler.remove_job(job_id)

    def schedules(self) -> set[str]:
        return set(self._times)

    def shutdown(self) -> None:
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)
