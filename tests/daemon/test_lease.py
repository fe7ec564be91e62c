"""The Lease elector: one leader, monotonic deadlines, step-down, release (fake clock)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tidal.daemon.lease import ElectionTimings, LeaderElector
from tidal.domain.clock import FakeClock


def pair(store: Any, clock: FakeClock) -> tuple[LeaderElector, LeaderElector]:
    return LeaderElector(store, "a", clock), LeaderElector(store, "b", clock)


def leader_and_standby(
    store: Any, clock: FakeClock, **leader: Any
) -> tuple[LeaderElector, LeaderElector]:
    """a takes the Lease, then b tries and observes a's record."""
    a, b = LeaderElector(store, "a", clock, **leader), LeaderElector(store, "b", clock)
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    return a, b


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 6, 1, tzinfo=UTC))


def test_two_electors_one_leader(clock: FakeClock, lease_store: Any) -> None:
    """Of two electors racing for one Lease, exactly one leads."""
    a, b = pair(lease_store, clock)
    assert a.try_acquire_or_renew() is True
    assert b.try_acquire_or_renew() is False
    assert (a.is_leader(), b.is_leader()) == (True, False)
    assert b.holder == "a"


def test_standby_waits_lease_duration_from_its_own_observation(
    clock: FakeClock, lease_store: Any
) -> None:
    """A standby takes over only once the record stayed unchanged for leaseDuration."""
    _, b = leader_and_standby(lease_store, clock)
    clock.advance(timedelta(seconds=14))
    assert b.try_acquire_or_renew() is False
    clock.advance(timedelta(seconds=2))
    assert b.try_acquire_or_renew() is True
    assert lease_store.obj is not None and lease_store.obj["spec"]["leaseTransitions"] == 1


def test_renewals_keep_leadership(clock: FakeClock, lease_store: Any) -> None:
    """A leader renewing every retry period keeps the Lease; the standby never gets it."""
    a, b = pair(lease_store, clock)
    a.try_acquire_or_renew()
    for _ in range(20):
        clock.advance(timedelta(seconds=2))
        assert a.try_acquire_or_renew() and a.check_deadline()
        assert not b.try_acquire_or_renew()


def test_leader_that_cannot_renew_stops_at_renew_deadline(
    clock: FakeClock, lease_store: Any
) -> None:
    """API down: is_leader turns False at renewDeadline, before a standby may take over."""
    lost: list[str] = []
    a, b = leader_and_standby(lease_store, clock, on_stopped_leading=lambda: lost.append("a"))
    lease_store.down = True
    clock.advance(timedelta(seconds=9))
    assert not a.try_acquire_or_renew() and a.check_deadline() and a.is_leader()
    clock.advance(timedelta(seconds=1))
    assert not a.is_leader()  # even without the renew thread running (stopped process)
    assert not a.check_deadline() and lost == ["a"]
    lease_store.down = False
    assert not b.try_acquire_or_renew()  # 10 s < 15 s lease duration: standby still waits
    clock.advance(timedelta(seconds=5))
    assert b.try_acquire_or_renew()
    assert not a.try_acquire_or_renew()  # the old leader does not get it back


def test_release_lets_standby_take_over_at_once(clock: FakeClock, lease_store: Any) -> None:
    """On shutdown the leader empties the holder; the standby acquires without waiting."""
    a, b = leader_and_standby(lease_store, clock)
    a.release()
    assert not a.is_leader()
    assert lease_store.obj is not None and lease_store.obj["spec"]["holderIdentity"] is None
    assert b.try_acquire_or_renew()


def test_timings_must_be_ordered() -> None:
    """retryPeriod < renewDeadline < leaseDuration is enforced with a clear error."""
    with pytest.raises(ValueError, match="retryPeriod < renewDeadline < leaseDuration"):
        ElectionTimings(lease_duration=10, renew_deadline=10, retry_period=2)


def test_woken_leader_never_retakes_a_released_lease(clock: FakeClock, lease_store: Any) -> None:
    """After a freeze past the deadline, renewing writes nothing even if the Lease is free."""
    a, b = leader_and_standby(lease_store, clock)
    clock.advance(timedelta(seconds=16))
    assert b.try_acquire_or_renew()
    b.release()
    writes = len(lease_store.writes)
    assert not a.try_acquire_or_renew(renew_only=True)
    assert not a.is_leader() and len(lease_store.writes) == writes


def test_run_lock_holding_yields_whether_it_was_taken_and_releases_after(
    clock: FakeClock, lease_store: Any
) -> None:
    """`with lock.holding() as held`: taken and renewed inside, released after; a lock held by
    another process yields False and is left alone."""
    from tidal.daemon.lease import RunLock

    mine = RunLock(lease_store, "team", "daemon:a", clock)
    other = RunLock(lease_store, "team", "cli:b", clock)
    with mine.holding() as held:
        assert held and mine.held()
        with other.holding() as also:
            assert not also and other.holder == "daemon:a"
    assert not mine.held()
    with other.holding() as held:
        assert held and other.holder == "cli:b"


def test_the_leader_publishes_its_command_api_on_the_lease(
    clock: FakeClock, lease_store: Any
) -> None:
    """A leader with a command API annotates the Lease from its first acquire; a standby reads
    that address; once released, no address is read."""
    from tidal.daemon.lease import api_annotation, leader_api_url

    leader = LeaderElector(
        lease_store, "a", clock, publish=lambda: api_annotation("a", "http://10.0.0.1:8081")
    )
    standby = LeaderElector(lease_store, "b", clock)
    assert leader.try_acquire_or_renew() and not standby.try_acquire_or_renew()
    assert leader_api_url(lease_store.get()) == "http://10.0.0.1:8081"
    leader.release()
    assert leader_api_url(lease_store.get()) is None
