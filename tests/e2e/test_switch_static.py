"""Static-weight team over HTTP: patch + touch + Lazy, 40 Deployments 80/20 -> 0/100 in
waves of 25%, floors held (proved from the emulator's timeline), and a second run is a no-op."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.switch_helpers import (
    DAY,
    NS,
    TEAM_T1,
    MakeEmulator,
    client_for,
    cluster,
    cpp,
    deployment,
    namespace,
    schedule_text,
    switch,
    write_schedule,
    writes,
)
from tidal.engine import events as ev
from tidal.engine.journal import InMemoryJournal
from tidal.karmada import policies

pytestmark = pytest.mark.e2e

SCHEDULE = schedule_text(
    "team-static",
    workloads=TEAM_T1,
    rollout="""
    waveSize: 25%
    pauseBetweenWaves: 0s
    waveTimeout: 30s
    floors:
      - clusters: [cluster-b]
        minReadyReplicas: 1
""",
)  # the night window's trigger is auto: touch, as the night policy is static
# the same, moving directly: a run writes exactly what the schedule names (tidal's own surge
# overrides are not among them; tests/e2e/test_switch_surge.py has the surge twin)
DIRECT = SCHEDULE.replace("    waveSize: 25%\n", "    waveSize: 25%\n    strategy: direct\n")

WORKLOADS = 40


def _topology() -> list[dict[str, Any]]:
    topo = [
        cluster("cluster-a", startup=1.0, termination=1.0),
        cluster("cluster-b", startup=2.0, termination=1.0),
        namespace(),
        cpp("team-cpp", "t1", DAY),
    ]
    return topo + [deployment(f"web-{i:02d}", "t1", 5) for i in range(WORKLOADS)]


def _settle(emu: Any) -> None:
    """Wait until every workload is ready at 4/1 before the switch."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        ready = {}
        for s in emu.timeline():
            ready[(s["workload"], s["cluster"])] = s["ready"]
        if (
            sum(1 for (w, c), r in ready.items() if c == "cluster-b" and r >= 1) == WORKLOADS
            and sum(r for (w, c), r in ready.items() if c == "cluster-a") == 4 * WORKLOADS
        ):
            return
        time.sleep(0.05)
    raise AssertionError("topology did not settle")


def test_static_team_moves_in_sequential_waves_with_floors_held(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """40 Deployments go 80/20 -> 0/100 in 4 sequential waves; cluster-b never below 1 ready."""
    emu = make_switch_emulator(_topology())
    _settle(emu)
    client = client_for(emu, tmp_path)
    path = write_schedule(tmp_path, SCHEDULE)
    t0 = emu.clock.now()
    events: list[Any] = []
    record = switch(client, path, "night", events=events)

    assert record.result == "succeeded", record.to_json()
    assert [len(w.workloads) for w in record.waves] == [10, 10, 10, 10]
    assert all(w.result == "succeeded" for w in record.waves)
    changed = [e for e in events if isinstance(e, ev.PolicyChanged)]
    assert changed[0].lazy_added and changed[-1].action == "lazy_restored"
    policy = policies.get_policy(client, "ClusterPropagationPolicy", "team-cpp", None)
    assert "activationPreference" not in policy["spec"]

    samples = [s for s in emu.timeline() if s["t"] >= t0]
    final: dict[tuple[str, str], tuple[int, int]] = {}
    for s in samples:
        final[(s["workload"], s["cluster"])] = (s["assigned"], s["ready"])
        if s["cluster"] == "cluster-b":
            assert s["ready"] >= 1, f"floor broken: {s}"
    for i in range(WORKLOADS):
        name = f"{NS}/Deployment/web-{i:02d}"
        assert final[(name, "cluster-b")] == (5, 5)
        assert final.get((name, "cluster-a"), (0, 0)) == (0, 0)

    def first(name: str, pred: Any, cluster: str = "cluster-b") -> float:
        return float(
            min(
                s["t"]
                for s in samples
                if s["workload"] == name and s["cluster"] == cluster and pred(s)
            )
        )

    for earlier, later in zip(record.waves, record.waves[1:], strict=False):
        converged = max(first(n, lambda s: s["ready"] == 5) for n in earlier.workloads)
        # moved: cluster-a lets go (a surge raised ahead only raises cluster-b first)
        moved = min(first(n, lambda s: s["assigned"] == 0, "cluster-a") for n in later.workloads)
        assert converged <= moved, f"wave {later.index} started before {earlier.index} converged"


def test_second_run_is_a_noop(make_switch_emulator: MakeEmulator, tmp_path: Path) -> None:
    """Run one writes only what the schedule names; the same window again writes nothing."""
    emu = make_switch_emulator()
    client = client_for(emu, tmp_path)
    path = write_schedule(tmp_path, DIRECT)
    journal = InMemoryJournal()
    emu.reset_requests()
    first = switch(client, path, "night", journal=journal)
    assert first.result == "succeeded" and not first.noop
    written = {(r.resource, r.name) for r in writes(emu)}
    assert written == {("clusterpropagationpolicies", "team-cpp")} | {
        ("deployments", f"web-{i}") for i in range(4)
    }  # only what the schedule names
    emu.reset_requests()
    second = switch(client, path, "night", journal=journal)
    assert second.result == "succeeded" and second.noop and second.waves == []
    assert writes(emu) == []
