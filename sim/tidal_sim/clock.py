"""One clock drives the whole emulator: real, accelerated, or advanced by hand in tests.

Simulated time is a float of seconds since the epoch. Controllers never call time.time():
they ask the clock for `now()` and register timers with `call_at()`. A `ManualClock` runs due
timers only when a test calls `advance()`, so a full night switch can be replayed in
milliseconds; a `ScaledClock` runs them from a background thread at `speed` times real time.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

Callback = Callable[[], None]


@dataclass(order=True)
class _Timer:
    due: float
    seq: int
    callback: Callback = field(compare=False)
    cancelled: bool = field(default=False, compare=False)


class TimerHandle:
    """Lets the owner of a timer cancel it before it fires."""

    def __init__(self, timer: _Timer) -> None:
        self._timer = timer

    def cancel(self) -> None:
        self._timer.cancelled = True


class Clock:
    """Base clock: a heap of timers; subclasses decide how time moves."""

    def __init__(self) -> None:
        self._timers: list[_Timer] = []
        self._seq = itertools.count()
        self._lock = threading.Condition()

    def now(self) -> float:
        raise NotImplementedError

    def now_datetime(self) -> datetime:
        return datetime.fromtimestamp(self.now(), tz=UTC)

    def rfc3339(self) -> str:
        return format_rfc3339(self.now())

    def call_at(self, due: float, callback: Callback) -> TimerHandle:
        with self._lock:
            timer = _Timer(due, next(self._seq), callback)
            heapq.heappush(self._timers, timer)
            self._lock.notify_all()
            return TimerHandle(timer)

    def call_later(self, delay: float, callback: Callback) -> TimerHandle:
        return self.call_at(self.now() + max(0.0, delay), callback)

    def _pop_due(self, now: float) -> Callback | None:
        with self._lock:
            while self._timers and self._timers[0].cancelled:
                heapq.heappop(self._timers)
            if self._timers and self._timers[0].due <= now:
                return heapq.heappop(self._timers).callback
            return None

    def _next_due(self) -> float | None:
        with self._lock:
            live = [t.due for t in self._timers if not t.cancelled]
            return min(live) if live else None

    def start(self) -> None:
        """Begin firing timers on their own (no-op for a manual clock)."""

    def stop(self) -> None:
        """Stop firing timers."""


class ManualClock(Clock):
    """Time moves only when the test says so; due timers run inside `advance()`."""

    def __init__(self, start: float = 1_767_225_600.0) -> None:  # 2026-01-01T00:00:00Z
        super().__init__()
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        target = self._now + seconds
        while True:
            due = self._next_due()
            if due is None or due > target:
                break
            self._now = max(self._now, due)
            callback = self._pop_due(self._now)
            if callback is not None:
                callback()
        self._now = target

    def run_due(self) -> None:
        """Run every timer due at the current instant (e.g. zero-delay reactions)."""
        self.advance(0.0)


class ScaledClock(Clock):
    """Real time multiplied by `speed`; a daemon thread fires timers as they fall due."""

    def __init__(self, speed: float = 1.0, start: float | None = None) -> None:
        super().__init__()
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = speed
        self._real0 = time.monotonic()
        self._sim0 = time.time() if start is None else start
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    def now(self) -> float:
        return self._sim0 + (time.monotonic() - self._real0) * self.speed

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="sim-clock", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            self._lock.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _run(self) -> None:
        while not self._stopping.is_set():
            callback = self._pop_due(self.now())
            if callback is not None:
                try:
                    callback()
                except Exception:  # a failing controller callback must not stop time
                    import logging

                    logging.getLogger(__name__).exception("sim timer callback failed")
                continue
            due = self._next_due()
            with self._lock:
                wait = 0.2 if due is None else max(0.0, (due - self.now()) / self.speed)
                self._lock.wait(timeout=min(wait, 0.2))


def format_rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
