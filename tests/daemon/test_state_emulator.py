"""State ConfigMaps and the Lease against the emulator over HTTP: fencing by resourceVersion."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tidal.daemon.lease import KarmadaLeaseStore, LeaderElector
from tidal.daemon.state import DaemonOutcome, HandledRecord, StateStore
from tidal.domain.clock import FakeClock
from tidal.domain.windows import Controls, Hold
from tidal.engine.journal import RunState
from tidal.engine.states import Phase
from tidal.karmada.client import KarmadaClient
from tidal.karmada.errors import Conflict
from tidal.karmada.state_objects import ensure_namespace

pytestmark = pytest.mark.e2e
NS = "tidal-system"


@pytest.fixture
def client(emulator: Any, tmp_path: Path) -> KarmadaClient:
    c = KarmadaClient.from_kubeconfig(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    ensure_namespace(c, NS)
    return c


def test_journal_round_trip_and_second_writer_is_fenced(client: KarmadaClient) -> None:
    """A run state saved and loaded is equal; a writer with a stale resourceVersion gets 409."""
    a, b = StateStore(client, NS), StateStore(client, NS)
    state = RunState(schedule="team-1", window="night", run_id="r1", phase=Phase.POLICIES)
    a.save(state)
    loaded = b.load("team-1")
    assert loaded == state and loaded is not None and loaded.journal_token
    loaded.phase = Phase.WAVES
    b.save(loaded)  # the standby took over and wrote
    state.phase = Phase.WAVES
    with pytest.raises(Conflict):
        a.save(state)  # the old leader's next write is refused
    again = a.load("team-1")
    assert again is not None and again.phase == "waves"


def test_new_run_over_unfinished_run_is_refused(client: KarmadaClient) -> None:
    """A fresh run (no token) may replace a finished run but never an unfinished one."""
    store = StateStore(client, NS)
    store.save(RunState(schedule="t", window="night", run_id="r1", phase=Phase.WAVES))
    with pytest.raises(Conflict):
        store.save(RunState(schedule="t", window="day", run_id="r2"))
    done = store.load("t")
    assert done is not None
    done.phase = Phase.DONE
    store.save(done)
    store.save(RunState(schedule="t", window="day", run_id="r2"))
    latest = store.load("t")
    assert latest is not None and latest.run_id == "r2"


def test_handled_record_is_fenced_but_controls_merge(client: KarmadaClient) -> None:
    """An operator's control change does not fence the daemon; another handled record does."""
    store = StateStore(client, NS)
    at = datetime(2026, 6, 1, 15, tzinfo=UTC)
    seen = store.read("t")
    seen = store.record_handled(seen, HandledRecord("night", at, DaemonOutcome.STARTED, "r1"))
    until = at + timedelta(hours=8)
    store.update_controls("t", lambda c: Controls(True, None, Hold("day", until, at)))
    seen = store.record_handled(seen, HandledRecord("night", at, DaemonOutcome.SUCCEEDED, "r1"))
    now = store.read("t")
    assert now.controls.suspended and now.controls.hold == Hold("day", until, at)
    assert now.handled is not None and now.handled.outcome == "succeeded"
    other = StateStore(client, NS)
    other.record_handled(other.read("t"), HandledRecord("day", until, DaemonOutcome.STARTED, "r2"))
    with pytest.raises(Conflict):
        store.record_handled(seen, HandledRecord("night", at, DaemonOutcome.FAILED, "r1"))
    assert set(store.list_states()) == {"t"}


def test_two_electors_over_http_and_a_stopped_leader_is_fenced(client: KarmadaClient) -> None:
    """One leader of two; a leader stopped past the lease loses it and its state write is 409."""
    clock = FakeClock(datetime(2026, 6, 1, tzinfo=UTC))
    a = LeaderElector(KarmadaLeaseStore(client, NS, "tidal-leader"), "a", clock)
    b = LeaderElector(KarmadaLeaseStore(client, NS, "tidal-leader"), "b", clock)
    assert a.try_acquire_or_renew() and not b.try_acquire_or_renew()
    a_state = StateStore(client, NS, guard=a.is_leader)
    run = RunState(schedule="t", window="night", run_id="r1", phase=Phase.WAVES)
    a_state.save(run)
    clock.advance(timedelta(seconds=16))  # a is frozen (SIGSTOP): no renewals
    assert b.try_acquire_or_renew()
    b_state = StateStore(client, NS, guard=b.is_leader)
    resumed = b_state.load("t")
    assert resumed is not None
    resumed.phase = Phase.FINISHING
    b_state.save(resumed)
    assert not a.is_leader()
    with pytest.raises(Conflict):
        a_state.save(run)  # refused by the lease guard
    with pytest.raises(Conflict):
        StateStore(client, NS).save(run)  # and by the server (409) without the guard
