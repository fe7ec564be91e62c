"""Time as a parameter: the engine and daemon ask a Clock, tests hand them a FakeClock."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, time-zone aware (UTC)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait; a fake clock just moves time forward."""
        ...

    def monotonic(self) -> float:
        """Seconds for measuring durations and deadlines."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(tz=UTC)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def monotonic(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that moves only when told to (or when someone sleeps on it)."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("FakeClock needs a time-zone aware start")
        self._now = start
        self._lock = threading.Lock()
        self._t0 = start

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def sleep(self, seconds: float) -> None:
        self.advance(timedelta(seconds=max(0.0, seconds)))

    def advance(self, delta: timedelta) -> None:
        with self._lock:
            self._now += delta

    def set(self, instant: datetime) -> None:
        with self._lock:
            self._now = instant

    def monotonic(self) -> float:
        with self._lock:
            return (self._now - self._t0).total_seconds()
