"""One clock for the whole demo: the emulator's accelerated clock, seen by the daemon too.

The emulator runs on a ScaledClock (simulated seconds since the epoch); the daemon and the
engine want a tidal.domain Clock (aware datetimes). `DaemonClock` adapts one to the other, so
pod start-up, pauses between waves and window starts all happen on the same timeline, and the
engine keeps comparing server timestamps with server timestamps.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from tidal_sim.clock import ScaledClock


class DemoClock(ScaledClock):
    """A ScaledClock that can also jump forward (skip the idle hours between two windows)."""

    def fast_forward(self, seconds: float) -> None:
        if seconds <= 0:
            return
        with self._lock:
            self._sim0 += seconds
            self._lock.notify_all()  # timers that fell due in the skipped span fire now


class DaemonClock:
    """The tidal.domain Clock protocol over the demo clock: sleeps shrink by its speed."""

    def __init__(self, sim: ScaledClock) -> None:
        self.sim = sim

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.sim.now(), tz=UTC)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds / self.sim.speed)

    def monotonic(self) -> float:
        return self.sim.now()
