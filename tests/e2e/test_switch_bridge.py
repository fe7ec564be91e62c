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
    GPU,
    NIGHT_AND_DAY,
    Ledger,
    desired,
    gpu_cluster,
    gpu_deployment,
    plan_json,
    splits,
    surge_schedule,
    switch_without_dips,
    team,
)
from tests.e2e.switch_helpers import (
    DAY,
    NS,
    MakeEmulator,
    client_for,
    cpp,
    invoke_cli,
    namespace,
    schedule_text,
    weights_window,
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
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
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
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
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
    direct = write_schedule(
        tmp_path,
        schedule_text(
            "team-s", FULL_AVAILABILITY + "    strategy: direct\n", windows=NIGHT_AND_DAY
        ),
    )
    assert invoke_cli("plan", direct, kubeconfig).exit_code == 3
    assert not writes(emu)


def test_a_rebalance_team_keeps_moving_small_workloads_directly_and_the_plan_says_why(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """trigger rebalance: no Lazy policy to bridge with, so the 1-replica workload moves
    without surge and the plan says a bridge needs trigger touch."""
    emu = make_switch_emulator(team([1]))
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    windows = NIGHT_AND_DAY.replace('start: "23:00"', 'start: "23:00"\n  trigger: rebalance')
    path = write_schedule(tmp_path, schedule_text("team-s", "waveSize: 1\n", windows=windows))
    plan = plan_json(path, kubeconfig, "night")
    assert not any(w["bridged"] for wave in plan["waves"] for w in wave["workloads"])
    assert any("a bridge needs trigger touch" in w for w in plan["warnings"])


def test_a_wave_that_bridges_and_surges_leases_its_room_as_one_hold(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """One wave bridging a 1-replica workload and surging a 5-replica one asks the budget once
    for both (a wave holding its bridge's room while it waited for its surge's could wait on
    another wave doing the same, for ever) and gives it back once, after both are done."""
    from tidal.domain.clock import SystemClock
    from tidal.engine.journal import InMemoryJournal
    from tidal.engine.switch import run_switch
    from tidal.loading import load_schedules

    emu = make_switch_emulator(team([1, 5]))
    client = client_for(emu, tmp_path)
    (loaded,) = load_schedules([surge_schedule(tmp_path, FULL_AVAILABILITY)]).schedules
    ledger = Ledger(True)
    events: list[Any] = []
    record = run_switch(
        client,
        loaded,
        "night",
        clock=SystemClock(),
        journal=InMemoryJournal(),
        budget=ledger,
        on_event=events.append,
    )
    assert record.result == "succeeded", record.to_json()
    hold = f"team-s/{record.run_id}/w1"
    assert [(verb, holder) for verb, holder, _ in ledger.calls] == [
        ("reserve", hold),
        ("running", hold),
        ("release", hold),
    ]
    # web-0's bridge adds 1 replica in cluster-b, web-1's surge 4
    assert ledger.calls[0][2]["cluster-b"][GPU] == 5.0
    assert next(e.step for e in events if isinstance(e, ev.BridgeStepped)) is BridgeStep.RESERVED


def test_two_teams_that_bridge_and_surge_share_a_tight_budget_without_a_deadlock(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Two teams at once on the daemon's shared budget, each with one wave bridging six
    1-replica workloads (6 GPUs in cluster-b) and surging a 5-replica one (4 more); surges may
    use half of cluster-b's 30 free GPUs: room for one team's wave, not for both bridges and a
    surge. One team waits for the other instead of each holding its bridge while waiting for
    its surge (both would then time out); both switch within their waveTimeout."""
    import threading

    from tidal.daemon.budget import SharedBudget
    from tidal.domain.clock import SystemClock
    from tidal.engine.journal import InMemoryJournal
    from tidal.engine.record import RunRecord
    from tidal.engine.switch import run_switch
    from tidal.loading import load_schedules

    topo = [
        gpu_cluster("cluster-a", 64, startup=0.5),
        gpu_cluster("cluster-b", 2 + 30, startup=0.5),
        namespace(),
    ]
    for team_id in ("t1", "t2"):
        topo.append(cpp(f"{team_id}-cpp", team_id, DAY))
        for name, n in [(f"{team_id}-big", 5)] + [(f"{team_id}-s{i}", 1) for i in range(6)]:
            d = gpu_deployment(name, n)
            d["metadata"]["labels"]["team"] = team_id
            topo.append(d)
    emu = make_switch_emulator(topo)
    client = client_for(emu, tmp_path)
    rollout = """
        waveSize: 7
        pauseBetweenWaves: 0s
        waveTimeout: 30s
        surge: {headroomPercent: 50}
        floors:
          - minAvailablePercent: 100
    """
    budget = SharedBudget(SystemClock())
    records: dict[str, RunRecord] = {}

    def night(team_id: str) -> None:
        policy = f"{team_id}-cpp"
        windows = weights_window(
            "night", "23:00", {"cluster-b": 1}, policy=policy
        ) + weights_window("day", "07:00", {"cluster-a": 4, "cluster-b": 1}, policy=policy)
        folder = tmp_path / team_id
        folder.mkdir()
        path = write_schedule(folder, schedule_text(f"team-{team_id}", rollout, windows=windows))
        (loaded,) = load_schedules([path]).schedules
        records[team_id] = run_switch(
            client,
            loaded,
            "night",
            clock=SystemClock(),
            journal=InMemoryJournal(),
            budget=budget.for_schedule(f"team-{team_id}"),
        )

    threads = [threading.Thread(target=night, args=(t,)) for t in ("t1", "t2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    assert {t: r.result for t, r in records.items()} == {"t1": "succeeded", "t2": "succeeded"}, {
        t: r.reason for t, r in records.items()
    }
    assert [len(r.waves) for r in records.values()] == [1, 1]
    assert budget.leased() == {}
