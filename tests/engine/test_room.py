"""A wave waiting for room: how soon it asks the budget again, on a fake clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tidal.domain.clock import FakeClock
from tidal.engine.room import RESERVE_POLL_SECONDS, RESERVE_WAKE_SECONDS, wait_for_status

T0 = datetime(2026, 12, 3, 23, 0, tzinfo=UTC)


def test_a_shared_cluster_cache_that_changes_wakes_the_waiter_at_once() -> None:
    """With the daemon's Cluster cache, a status change 0.6 s into the wait ends it within one
    wake interval, long before the 2 s poll."""
    clock = FakeClock(T0)
    start = clock.monotonic()
    changed_at = start + 0.6
    wait_for_status(clock, lambda: "8" if clock.monotonic() >= changed_at else "7", "7")
    waited = clock.monotonic() - start
    assert 0.6 <= waited <= 0.6 + RESERVE_WAKE_SECONDS


def test_an_unchanged_cache_waits_one_poll() -> None:
    """No Cluster status change: the waiter asks again after the usual poll, not sooner."""
    clock = FakeClock(T0)
    start = clock.monotonic()
    wait_for_status(clock, lambda: "7", "7")
    assert clock.monotonic() - start == RESERVE_POLL_SECONDS


def test_a_run_alone_polls() -> None:
    """Without a shared cache (a run alone lists the clusters each time) it sleeps one poll."""
    clock = FakeClock(T0)
    before = clock.now()
    wait_for_status(clock, lambda: None, None)
    assert clock.now() - before == timedelta(seconds=RESERVE_POLL_SECONDS)
