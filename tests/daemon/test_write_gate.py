"""The seam between the client and the Lease: an acting write, and every retry of it, is sent
only while the Lease is held, and never after it may have passed to another replica."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from structlog.testing import capture_logs

from tests.karmada.test_client import FakeApi, _Response
from tidal.daemon.lease import ElectionTimings, LeaderElector
from tidal.domain.clock import FakeClock
from tidal.karmada.client import (
    CLUSTER_PROPAGATION_POLICIES as CPP,
)
from tidal.karmada.client import (
    KNOWN,
    KarmadaClient,
    RetryPolicy,
)
from tidal.karmada.errors import LeaseLost

LEASES = next(r for r in KNOWN if r.plural == "leases")
TIMINGS = ElectionTimings(lease_duration=15, renew_deadline=10, retry_period=2)


def _ok(obj: dict[str, Any]) -> _Response:
    return _Response(200, json.dumps(obj).encode())


def _throttled(seconds: int) -> _Response:
    return _Response(429, b'{"reason":"TooManyRequests"}', {"Retry-After": str(seconds)})


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 6, 1, tzinfo=UTC))


def _leader(lease_store: Any, clock: FakeClock) -> LeaderElector:
    elector = LeaderElector(lease_store, "a", clock, TIMINGS)
    assert elector.try_acquire_or_renew()
    return elector


def _client(api: FakeApi, clock: FakeClock, elector: LeaderElector) -> KarmadaClient:
    return KarmadaClient(
        api, sleep=clock.sleep, write_gate=elector, retry=RetryPolicy(attempts=4, base_delay=0.01)
    )


def _patch(client: KarmadaClient) -> dict[str, Any]:
    return client.request(
        "patch",
        CPP,
        "PATCH",
        CPP.path(name="team"),
        body={"spec": {}},
        content_type="application/merge-patch+json",
    )


def test_retry_after_longer_than_the_lease_gives_the_write_up_and_steps_down(
    clock: FakeClock, lease_store: Any
) -> None:
    """A 429 whose Retry-After outlives the Lease: no retry is sent; LeaseLost; stepped down."""
    elector = _leader(lease_store, clock)
    clock.advance(timedelta(seconds=3))  # 7 s of the renew deadline left
    api = FakeApi([_throttled(20), _ok({"kind": "ClusterPropagationPolicy"})])
    client = _client(api, clock, elector)
    with capture_logs() as logs, pytest.raises(LeaseLost):
        _patch(client)
    assert len(api.sent) == 1  # the throttled attempt only: the retry never went out
    assert not elector.is_leader()
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["leader_lost"]


def test_retry_inside_the_lease_is_sent(clock: FakeClock, lease_store: Any) -> None:
    """A Retry-After shorter than what is left of the Lease is honoured and the write lands."""
    elector = _leader(lease_store, clock)
    api = FakeApi([_throttled(2), _ok({"kind": "ClusterPropagationPolicy"})])
    client = _client(api, clock, elector)
    assert _patch(client) == {"kind": "ClusterPropagationPolicy"}
    assert len(api.sent) == 2 and elector.is_leader()


def test_a_retry_after_the_renew_deadline_is_never_sent(clock: FakeClock, lease_store: Any) -> None:
    """Retries that add up past the renew deadline stop at the deadline, not after it."""
    elector = _leader(lease_store, clock)
    api = FakeApi([_throttled(4), _throttled(4), _throttled(4), _ok({})])
    client = _client(api, clock, elector)
    with pytest.raises(LeaseLost):
        _patch(client)
    assert len(api.sent) == 3  # at 0 s, 4 s and 8 s; the one at 12 s would outlive the Lease


def test_no_acting_write_without_the_lease(clock: FakeClock, lease_store: Any) -> None:
    """A replica whose renew deadline passed sends no write at all, but still reads."""
    elector = _leader(lease_store, clock)
    clock.advance(timedelta(seconds=11))
    api = FakeApi([_ok({"kind": "ClusterPropagationPolicy"})])
    client = _client(api, clock, elector)
    with pytest.raises(LeaseLost):
        _patch(client)
    assert api.sent == []
    assert (
        client.request("get", CPP, "GET", CPP.path(name="team"))["kind"]
        == "ClusterPropagationPolicy"
    )


def test_lease_writes_are_not_gated(clock: FakeClock, lease_store: Any) -> None:
    """The Lease's own renewals pass the gate (they are how it is kept)."""
    elector = _leader(lease_store, clock)
    clock.advance(timedelta(seconds=11))
    api = FakeApi([_ok({"kind": "Lease"})])
    client = _client(api, clock, elector)
    client.request("update", LEASES, "PUT", LEASES.path("ns", "l"), body={})
    assert len(api.sent) == 1


def test_a_write_times_out_before_the_lease_could_pass(clock: FakeClock, lease_store: Any) -> None:
    """An acting write waits for its answer no longer than the Lease is surely held."""
    elector = _leader(lease_store, clock)
    clock.advance(timedelta(seconds=8))
    timeouts: list[Any] = []

    class Recording(FakeApi):
        def call_api(
            self,
            method: str,
            url: str,
            header_params: Any = None,
            body: Any = None,
            _request_timeout: Any = None,
        ) -> Any:
            timeouts.append(_request_timeout)
            return super().call_api(method, url, header_params, body, _request_timeout)

    client = _client(Recording([_ok({"kind": "ClusterPropagationPolicy"})]), clock, elector)
    _patch(client)
    assert timeouts == [pytest.approx(2.0)]


def test_manual_switch_writes_depend_on_its_run_lock(
    emulator: Any, tmp_path: Any, clock: FakeClock
) -> None:
    """`tidal switch`'s journal gates the client's acting writes on the schedule's run lock
    from its first save, and lifts the gate when it lets the lock go."""
    from tidal.daemon.manual import ManualRunJournal
    from tidal.engine.journal import RunState

    client = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kc"))
    journal = ManualRunJournal(client, "tidal-system", "me", clock, TIMINGS)
    assert client.write_gate is None
    journal.save(RunState("team-a", "night", "r1"))
    assert journal.lock is not None and client.write_gate is journal.lock.elector
    clock.advance(timedelta(seconds=11))  # the lock's renew deadline passed (fake clock)
    with pytest.raises(LeaseLost):
        _patch(client)
    journal.close()
    assert client.write_gate is None
