"""The client-side token bucket on a fake clock: bursts, the sustained rate, turns in order."""

from __future__ import annotations

import pytest

from tidal.karmada.ratelimit import RateLimiter


class Ticks:
    """A monotonic clock that moves only when slept on."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_burst_goes_at_once_then_the_rate_holds() -> None:
    """`burst` requests pass without waiting; the next ones are spaced 1/qps apart."""
    t = Ticks()
    limiter = RateLimiter(10, 5, monotonic=t.monotonic, sleep=t.sleep)
    assert [limiter.wait() for _ in range(5)] == [0.0] * 5
    assert t.now == 0.0
    for _ in range(20):
        limiter.wait()
    assert t.now == pytest.approx(2.0)
    assert limiter.waited > 0


def test_a_quiet_spell_refills_only_up_to_burst() -> None:
    """After a long pause only `burst` tokens are there, not the whole pause's worth."""
    t = Ticks()
    limiter = RateLimiter(10, 3, monotonic=t.monotonic, sleep=t.sleep)
    t.now = 100.0
    assert [limiter.reserve() for _ in range(4)] == pytest.approx([0, 0, 0, 0.1])


def test_concurrent_teams_take_turns() -> None:
    """Three switches sending one request at a time: a team with 100 requests to send does
    not delay the team with 5 beyond its share (turns are handed out in the order asked)."""
    t = Ticks()
    limiter = RateLimiter(10, 1, monotonic=t.monotonic, sleep=t.sleep)
    remaining = {"big": 100, "a": 5, "b": 5}
    ready_at = dict.fromkeys(remaining, 0.0)  # when each team sends its next request
    finished: dict[str, float] = {}
    while remaining:
        team = min(remaining, key=lambda n: (ready_at[n], n))
        t.now = max(t.now, ready_at[team])
        ready_at[team] = t.now + limiter.reserve()
        remaining[team] -= 1
        if remaining[team] == 0:
            finished[team] = ready_at[team]
            del remaining[team]
    assert finished["a"] <= 5 * 3 / 10 and finished["b"] <= 5 * 3 / 10
    assert finished["big"] == pytest.approx(109 / 10)


def test_bad_limits_are_refused() -> None:
    """qps <= 0 or burst < 1 is a ValueError naming both."""
    with pytest.raises(ValueError, match="qps > 0 and burst >= 1"):
        RateLimiter(0, 1)
