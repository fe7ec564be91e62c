"""Client-side rate limiting, like client-go's: a token bucket of `qps` tokens a second holding
at most `burst`.

Each request (every attempt, retries included) takes one token; when none is left the caller
waits for its turn. Turns are handed out in the order asked (a reservation, as in Go's
x/time/rate), and every switch sends one request at a time, so concurrent switches get their
requests through in turn: a team moving thousands of workloads cannot crowd out the others.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class RateLimiter:
    """A thread-safe token bucket; time and sleep are parameters (fake clocks in tests)."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"a rate limit needs qps > 0 and burst >= 1 (got {qps}, {burst})")
        self.qps, self.burst = float(qps), burst
        self._monotonic, self._sleep = monotonic, sleep
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = monotonic()
        self.waited = 0.0  # seconds callers spent waiting, in total

    def reserve(self) -> float:
        """Take a token; the seconds to wait before using it (0: at once)."""
        with self._lock:
            now = self._monotonic()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0  # may go below zero: later callers queue behind
            delay = max(0.0, -self._tokens / self.qps)
            self.waited += delay
            return delay

    def wait(self) -> float:
        """Take a token, waiting for it; the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            self._sleep(delay)
        return delay
