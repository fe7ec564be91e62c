"""Two `tidal run` processes against one emulator: exactly one acts; SIGTERM releases the
lease and exits 0; the standby takes over."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.daemon_helpers import (
    STATE_NS,
    settle,
    start_daemon,
    stop,
    topology,
    wait_for,
    write_due_schedule,
    writes_by,
)
from tidal.daemon.state import StateStore
from tidal.karmada.client import KarmadaClient
from tidal.sim.clock import ScaledClock

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
    emu = make_emulator(topology(), clock=ScaledClock(20.0))
    settle(emu)
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
