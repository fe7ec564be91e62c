"""Two `tidal run` processes against one emulator: exactly one acts; SIGTERM releases the
lease and exits 0; the standby takes over."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.daemon_helpers import (
    STATE_NS,
    log_events,
    settled_team,
    start_daemon,
    stop,
    wait_for,
    write_due_schedule,
    writes_by,
)
from tests.e2e.surge_helpers import slow_startup
from tidal.daemon.state import DaemonOutcome, StateStore
from tidal.karmada.client import KarmadaClient
from tidal.karmada.overrides import list_overrides

pytestmark = pytest.mark.e2e

ACTING = {"clusterpropagationpolicies", "deployments", "workloadrebalancers"}


def _outcome(client: KarmadaClient) -> str | None:
    try:
        handled = StateStore(client, STATE_NS).read("team-t1").handled
    except Exception:
        return None
    return handled.outcome if handled else None


def test_two_replicas_one_window_one_set_of_writes(make_emulator: Any, tmp_path: Path) -> None:
    """A due window with two replicas: one replica writes the policy and triggers, once."""
    emu = settled_team(make_emulator)
    schedules = tmp_path / "schedules"
    write_due_schedule(schedules)
    client = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "kc"))
    a = start_daemon(emu, tmp_path, "a", schedules)
    b = start_daemon(emu, tmp_path, "b", schedules)
    try:
        wait_for(lambda: _outcome(client) not in (None, "started"), 90, "the switch to finish")
        assert _outcome(client) == "succeeded", (tmp_path / "a.log").read_text()[-3000:]
    finally:
        codes = [stop(a), stop(b)]
    assert codes == [0, 0]
    writes = writes_by(emu)
    acting = {who for who, ws in writes.items() if any(w[1] in ACTING for w in ws)}
    assert len(acting) == 1, writes.keys()
    (leader,) = acting
    policy_writes = [w for w in writes[leader] if w[1] == "clusterpropagationpolicies"]
    touches = [w for w in writes[leader] if w[1] == "deployments"]
    assert policy_writes and len(touches) == len({t[2] for t in touches}) == 8


def test_sigterm_mid_switch_exits_0_and_standby_finishes(
    make_emulator: Any, tmp_path: Path
) -> None:
    """SIGTERM during a switch: exit 0 with the lease released; the standby resumes at once."""
    from tidal.karmada.leases import get_lease

    emu = settled_team(make_emulator)
    schedules = tmp_path / "schedules"
    write_due_schedule(schedules, pause="2s")
    client = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "kc"))
    a = start_daemon(emu, tmp_path, "a", schedules)
    wait_for(lambda: _outcome(client) == "started", 30, "a to start the run")
    b = start_daemon(emu, tmp_path, "b", schedules)
    try:
        assert stop(a) == 0
        lease = get_lease(client, STATE_NS, "tidal-leader")
        assert lease is not None and lease["spec"].get("holderIdentity") in (None, "b")
        wait_for(lambda: _outcome(client) not in (None, "started"), 90, "b to finish")
        assert _outcome(client) == "succeeded", (tmp_path / "b.log").read_text()[-3000:]
    finally:
        stop(b)
    touches: dict[str, int] = {}
    for ws in writes_by(emu).values():
        for _verb, resource, name in ws:
            if resource == "deployments" and name:
                touches[name] = touches.get(name, 0) + 1
    assert len(touches) == 8 and set(touches.values()) == {1}, touches


def test_sigterm_while_a_surge_waits_stops_at_once_and_the_next_daemon_resumes(
    make_emulator: Any, tmp_path: Path
) -> None:
    """SIGTERM while wave 1 waits for its surged replicas (cluster-b's pods slow to start),
    with a shutdown grace of two minutes: the daemon exits 0 within seconds, its run left
    journalled and unfinished (switch_interrupted, not fenced_out); a daemon started after it
    resumes the run and finishes it."""
    emu = settled_team(make_emulator)
    client = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "kc"))
    slow_startup(client, "cluster-b", 600)  # 30 s of wall time at 20x
    schedules = tmp_path / "schedules"
    write_due_schedule(schedules, wave_timeout="1h")
    a = start_daemon(emu, tmp_path, "a", schedules, TIDAL_SCHEDULER__SHUTDOWN_GRACE_SECONDS="120")
    wait_for(lambda: bool(list_overrides(client, schedule="team-t1")), 30, "wave 1 to surge")
    assert stop(a) == 0  # (within stop()'s 20 s, not the 120 s grace)
    events = [e["event"] for e in log_events(tmp_path / "a.log")]
    assert "switch_interrupted" in events and "fenced_out" not in events, events
    run = StateStore(client, STATE_NS).load("team-t1")
    assert run is not None and not run.finished
    slow_startup(client, "cluster-b", 1)
    b = start_daemon(emu, tmp_path, "b", schedules)
    try:
        wait_for(lambda: _outcome(client) not in (None, "started"), 90, "b to finish")
        assert _outcome(client) == "succeeded", (tmp_path / "b.log").read_text()[-3000:]
        resumed = StateStore(client, STATE_NS).load("team-t1")
        assert resumed is not None and resumed.run_id == run.run_id
    finally:
        stop(b)


def test_restart_outside_catch_up_window_runs_nothing(make_emulator: Any, tmp_path: Path) -> None:
    """A start older than catchUpWindow is recorded missed (the schedule ran before: its day
    start was handled); no policy or template is written."""
    from tidal.daemon.state import HandledRecord
    from tidal.karmada.state_objects import ensure_namespace

    emu = settled_team(make_emulator)
    schedules = tmp_path / "schedules"
    night = write_due_schedule(schedules, minutes_ago=3, catch_up="1m")
    client = KarmadaClient.from_kubeconfig(emu.write_kubeconfig(tmp_path / "kc"))
    ensure_namespace(client, STATE_NS)
    store, day = StateStore(client, STATE_NS), night - timedelta(hours=12)
    store.record_handled(
        store.read("team-t1"), HandledRecord("day", day, DaemonOutcome.SUCCEEDED, "d", day)
    )
    a = start_daemon(emu, tmp_path, "a", schedules)
    try:
        wait_for(lambda: _outcome(client) == "missed", 30, "the missed record")
    finally:
        assert stop(a) == 0
    acting = [w for ws in writes_by(emu).values() for w in ws if w[1] in ACTING]
    assert acting == []
