"""Bridges end to end over HTTP on the emulator with Karmada's default scheduler (no empty
workload propagation): 1-2 replica workloads all in cluster-a by day have no member in
cluster-b to raise; the bridge gives them one first, so they move to cluster-b and back
without ever having zero ready (or fewer than their replicas), under a 100% floor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.surge_helpers import (
    FULL_AVAILABILITY,
    NIGHT_AND_DAY,
    desired,
    plan_json,
    splits,
    surge_schedule,
    switch_without_dips,
    team,
)
from tests.e2e.switch_helpers import (
    NS,
    MakeEmulator,
    client_for,
    invoke_cli,
    schedule_text,
    write_schedule,
    writes,
)
from tidal.engine import events as ev
from tidal.engine.states import BridgeStep
from tidal.karmada import policies as policies_api
from tidal.karmada.client import KarmadaClient
from tidal.karmada.views import PolicyView

pytestmark = pytest.mark.e2e


def zero_ready(emu: Any, since: float) -> list[str]:
    """Every moment (since `since`) a workload had no ready replica in any cluster."""
    ready: dict[str, dict[str, int]] = {}
    out = []
    for s in emu.timeline():
        ready.setdefault(s["workload"], {})[s["cluster"]] = s["ready"]
        if s["t"] >= since and not sum(ready[s["workload"]].values()):
            out.append(f"{s['workload']} at {s['t']}")
    return out


def placement(client: KarmadaClient) -> dict[str, Any]:
    obj = policies_api.get_policy(client, "ClusterPropagationPolicy", "team-cpp", None)
    return dict(PolicyView(obj).spec.get("placement") or {})


def test_1_and_2_replica_workloads_move_and_back_without_a_zero_ready_moment(
        make_switch_emulator: MakeEmulator, tmp_path: Path) -> None:
    """Default scheduler, 80/20 by day (all in cluster-a): the night and the day switch
    succeed under minAvailablePercent 100, no workload is ever below its replicas (so never
    at zero ready), each ends at its share and nothing above, and the policy ends at the
    window's placement (the bridge placement never outlives a wave)."""
    emu = make_switch_emulator(team([1, 2, 1, 2]))
    client = client_for(emu, tmp_path)
    path = surge_schedule(tmp_path, FULL_AVAILABILITY)
    day = splits(emu)
    assert all(set(split) == {"cluster-a"} for split in day.values()), day
    night = {w: {"cluster-b": sum(split.values())} for w, split in day.items()}
    since = emu.clock.now()
    events: list[Any] = []
    switch_without_dips(emu, client, path, "night", day, night, events=events)
    assert splits(emu) == night and desired(emu) == night
    steps = [e.step for e in events if isinstance(e, ev.BridgeStepped)]
    assert steps.count(BridgeStep.RESTORED) == 2  # two waves, each bridged
    night_placement = placement(client)
    assert night_placement["replicaScheduling"].get("replicaSchedulingType") != "Duplicated"
    switch_without_dips(emu, client, path, "day", night, day)
    assert splits(emu) == day and desired(emu) == day
    assert zero_ready(emu, since) == []
    assert placement(client)["replicaScheduling"].get("replicaSchedulingType") != "Duplicated"


def test_the_plan_shows_the_bridge_and_its_room_before_any_write(
        make_switch_emulator: MakeEmulator, tmp_path: Path) -> None:
    """`tidal plan` marks each 1-2 replica workload bridged (Duplicated over both clusters),
    counts the bridge in the wave's surge room and finds the plan safe under 100%; with
    strategy direct the same plan is refused; nothing is written either way."""
    emu = make_switch_emulator(team([1, 2]))
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    path = surge_schedule(tmp_path, FULL_AVAILABILITY)
    emu.reset_requests()
    plan = plan_json(path, kubeconfig, "night")
    assert plan["safe"]
    rows = {w["workload"]: w for wave in plan["waves"] for w in wave["workloads"]}
    assert rows[f"{NS}/Deployment/web-0"]["bridge"] == {"cluster-a": 1, "cluster-b": 1}
    assert rows[f"{NS}/Deployment/web-1"]["bridge"] == {"cluster-a": 2, "cluster-b": 2}
    assert plan["waves"][0]["surge"]["cluster-b"]["pods"] == 3.0
    result = invoke_cli("plan", path, kubeconfig)
    assert result.exit_code == 0, result.output
    assert "bridge cluster-a=1 cluster-b=1" in result.output
    direct = write_schedule(tmp_path, schedule_text(
        "team-s", FULL_AVAILABILITY + "    strategy: direct\n", windows=NIGHT_AND_DAY))
    assert invoke_cli("plan", direct, kubeconfig).exit_code == 3
    assert not writes(emu)


def test_a_rebalance_team_keeps_moving_small_workloads_directly_and_the_plan_says_why(
        make_switch_emulator: MakeEmulator, tmp_path: Path) -> None:
    """trigger rebalance: no Lazy policy to bridge with, so the 1-replica workload moves
    without surge and the plan says a bridge needs trigger touch."""
    emu = make_switch_emulator(team([1]))
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    windows = NIGHT_AND_DAY.replace('start: "23:00"', 'start: "23:00"\n  trigger: rebalance')
    path = write_schedule(tmp_path, schedule_text("team-s", "waveSize: 1\n", windows=windows))
    plan = plan_json(path, kubeconfig, "night")
    assert not any(w["bridged"] for wave in plan["waves"] for w in wave["workloads"])
    assert any("a bridge needs trigger touch" in w for w in plan["warnings"])
