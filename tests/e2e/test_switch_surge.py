"""Make-before-break waves end to end over HTTP on the emulator: no replica leaves before its
replacement is ready (per workload and cluster, over the emulator's timeline), 1-replica
workloads are switched instead of refused, a 100% availability floor holds night and day, the
extra capacity held never exceeds what `tidal plan` announced, and a surge that cannot fit is
reported by the plan before anything is written."""

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
    dips,
    no_overrides,
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
    deployment_workloads,
    invoke_cli,
    schedule_text,
    write_schedule,
    writes,
)
from tests.e2e.switch_helpers import switch as run_window
from tidal.engine import events as ev
from tidal.karmada.client import MERGE_PATCH
from tidal.karmada.names import EXCLUDE
from tidal.karmada.overrides import list_overrides

pytestmark = pytest.mark.e2e


def test_full_availability_holds_through_the_night_and_the_day_switch(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """minAvailablePercent 100: every workload keeps all its replicas ready through the night
    switch and the day switch, no cluster drops below the share it keeps, and no override
    is left after either."""
    emu = make_switch_emulator(team([5, 5, 5, 5]))
    client = client_for(emu, tmp_path)
    path = surge_schedule(tmp_path, FULL_AVAILABILITY)
    day = {f"{NS}/Deployment/web-{i}": {"cluster-a": 4, "cluster-b": 1} for i in range(4)}
    night = {w: {"cluster-b": 5} for w in day}
    assert splits(emu) == day
    events: list[Any] = []
    switch_without_dips(emu, client, path, "night", day, night, events=events)
    assert splits(emu) == night and desired(emu) == night  # none above its share
    switch_without_dips(emu, client, path, "day", night, day)
    assert splits(emu) == day and desired(emu) == day


def test_small_workloads_are_switched_where_a_cluster_is_kept(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """3-4 replica workloads (2-3 in cluster-a, 1 in cluster-b by day) under 100% available:
    refused with strategy direct, switched with surge and never below their replicas. 1-2
    replica workloads (nothing in cluster-b by day) are named by the plan: bridged; a selector
    leaving them out is refused until they are excluded."""
    emu = make_switch_emulator(team([3, 4, 3, 4, 1, 2]))
    client = client_for(emu, tmp_path)
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    rollout = FULL_AVAILABILITY
    workloads = deployment_workloads("{matchLabels: {size: big}}")
    whole = write_schedule(tmp_path, schedule_text("team-s", rollout, windows=NIGHT_AND_DAY))
    plan = plan_json(whole, kubeconfig, "night")
    notes = " ".join(plan["warnings"])
    assert f"{NS}/Deployment/web-4: bridged" in notes
    assert f"{NS}/Deployment/web-5: bridged" in notes
    direct = write_schedule(
        tmp_path,
        schedule_text(
            "team-s", rollout + "    strategy: direct\n", windows=NIGHT_AND_DAY, workloads=workloads
        ),
    )
    emu.reset_requests()
    assert invoke_cli("plan", direct, kubeconfig).exit_code == 3
    assert not writes(emu)
    path = write_schedule(
        tmp_path, schedule_text("team-s", rollout, windows=NIGHT_AND_DAY, workloads=workloads)
    )
    assert invoke_cli("plan", path, kubeconfig).exit_code == 3  # web-4, web-5 missed: refused
    res = client.resource_for("apps/v1", "Deployment")
    for name in ("web-4", "web-5"):  # left out on purpose: excluded (their policy stays Lazy)
        client.request(
            "patch",
            res,
            "PATCH",
            res.path(NS, name),
            content_type=MERGE_PATCH,
            body={"metadata": {"annotations": {EXCLUDE: "true"}}},
        )
    before = {w: split for w, split in splits(emu).items() if w.rsplit("-", 1)[-1] in "0123"}
    after = {w: {"cluster-b": sum(split.values())} for w, split in before.items()}
    switch_without_dips(emu, client, path, "night", before, after)
    now = splits(emu)
    assert {w: now[w] for w in before} == after


def test_extra_gpus_held_never_exceed_the_plans_announcement(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Waves are sized by cluster-b's free GPUs less the headroom, and the GPUs members hold
    beyond the steady state never exceed the largest wave's extra `tidal plan` announced."""
    emu = make_switch_emulator(team([5, 5, 5, 5], b_gpus=30))
    client = client_for(emu, tmp_path)
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    path = surge_schedule(
        tmp_path,
        """
        waveSize: 4
        pauseBetweenWaves: 0s
        waveTimeout: 60s
        surge: {headroomPercent: 50}
    """,
    )
    plan = plan_json(path, kubeconfig, "night")
    assert plan["strategy"] == "surge" and plan["safe"], plan
    announced = max(
        sum(row.get(GPU, 0.0) for row in wave["extra"].values()) for wave in plan["waves"]
    )
    # 26 GPUs free in b, half kept as headroom: three 4-GPU surges, then one
    assert [len(w["workloads"]) for w in plan["waves"]] == [3, 1]
    assert [w["index"] for w in plan["waves"]] == list(range(1, len(plan["waves"]) + 1))
    since = emu.clock.now()
    record = run_window(client, path, "night")
    assert record.result == "succeeded", record.to_json()
    steady = 20
    desired: dict[tuple[str, str], int] = {}
    peak = 0
    for s in emu.timeline():
        desired[(s["workload"], s["cluster"])] = s["assigned"]
        if s["t"] >= since:
            peak = max(peak, sum(desired.values()) - steady)
    assert 0 < peak <= announced, (peak, announced)


def test_a_surge_that_cannot_fit_is_reported_before_any_write(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """cluster-b has 2 GPUs free: `tidal plan` names each workload whose surge never fits
    and what it lacks; with whenNoRoom: refuse the plan exits 3 and `switch` writes nothing."""
    emu = make_switch_emulator(team([5, 5], b_gpus=4))
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    path = surge_schedule(
        tmp_path,
        """
        waveSize: 1
        surge: {headroomPercent: 0, whenNoRoom: refuse}
    """,
    )
    emu.reset_requests()
    plan = plan_json(path, kubeconfig, "night")
    assert plan["safe"] is False
    missing = {item["workload"]: item["missing"] for item in plan["noRoom"]}
    assert missing[f"{NS}/Deployment/web-0"] == {"cluster-b": {GPU: 2.0}}
    assert any("its surge never fits" in p for p in plan["problems"])
    assert invoke_cli("switch", path, kubeconfig, "--yes").exit_code == 3
    assert not writes(emu)


def test_surge_steps_are_reported_as_events(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """The wave's overrides are created before its trigger and deleted after convergence
    (by their owner labels, one request)."""
    emu = make_switch_emulator(team([5, 5]))
    client = client_for(emu, tmp_path)
    path = surge_schedule(tmp_path, "waveSize: 2\npauseBetweenWaves: 0s\nwaveTimeout: 60s\n")
    emu.reset_requests()
    events: list[Any] = []
    record = run_window(client, path, "night", events=events)
    assert record.result == "succeeded"
    order = [
        (r.verb, r.resource)
        for r in emu.request_log()
        if not r.dry_run
        and r.verb in ("create", "patch", "deletecollection")
        and r.resource in ("overridepolicies", "deployments")
    ]
    creates = order.index(("create", "overridepolicies"))
    touches = order.index(("patch", "deployments"))
    deletes = order.index(("deletecollection", "overridepolicies"))
    assert creates < touches < deletes
    assert any(isinstance(e, ev.GatePassed) for e in events)


def test_a_halt_keeps_an_override_whose_removal_would_break_a_floor(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Day switch with cluster-a's pods failing: the wave times out after the move, cluster-b
    is still held at 5 by the override, and removing it would leave 1 of 5 ready: the halt
    keeps it and status says why; once cluster-a recovers the next run removes it."""
    from tidal.daemon.status import overrides_left
    from tidal.engine.journal import InMemoryJournal
    from tidal.engine.states import SurgeStep

    emu = make_switch_emulator(team([5, 5]))
    client = client_for(emu, tmp_path)
    path = surge_schedule(
        tmp_path,
        """
        waveSize: 2
        pauseBetweenWaves: 0s
        waveTimeout: 4s
        floors:
          - minAvailablePercent: 100
    """,
    )
    assert run_window(client, path, "night").result == "succeeded"
    emu.set_pods_fail("cluster-a")
    journal = InMemoryJournal()
    record = run_window(client, path, "day", journal=journal)
    assert record.result == "failed", record.to_json()
    state = journal.load("team-s")
    assert state is not None and state.waves[0].forward.surge is not None
    assert state.waves[0].forward.surge.step is SurgeStep.KEPT
    left = overrides_left(state)
    assert left and "would break a floor" in left[0]["reason"]
    (kept,) = list_overrides(client, schedule="team-s")  # one for the wave's one split
    assert sorted(name for _a, _k, _n, name in kept.templates()) == ["web-0", "web-1"]
    assert all(split.get("cluster-b") == 5 for split in splits(emu).values())  # no dip
    emu.set_pods_fail("cluster-a", False)
    record = run_window(client, path, "day", journal=journal)
    assert record.result == "succeeded", record.to_json()
    no_overrides(client)


def test_a_surge_run_writes_the_schedule_and_its_own_overrides_then_a_rerun_writes_nothing(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Besides what the schedule names, a surge run writes only overrides it owns, all deleted
    by its end; the same window again is a no-op that writes nothing."""
    from tidal.engine.journal import InMemoryJournal

    emu = make_switch_emulator(team([5, 5]))
    client = client_for(emu, tmp_path)
    path = surge_schedule(tmp_path, "waveSize: 1\npauseBetweenWaves: 0s\nwaveTimeout: 60s\n")
    journal = InMemoryJournal()
    emu.reset_requests()
    first = run_window(client, path, "night", journal=journal)
    assert first.result == "succeeded" and not first.noop
    others = {(r.resource, r.name) for r in writes(emu) if r.resource != "overridepolicies"}
    assert others == {
        ("clusterpropagationpolicies", "team-cpp"),
        ("deployments", "web-0"),
        ("deployments", "web-1"),
    }
    ours = [r for r in writes(emu) if r.resource == "overridepolicies"]
    # one group for the run's one split: created by wave 1, joined by wave 2 ahead, while
    # wave 1 settles (tidal.engine.pacing); both parked in it until the run's last release
    assert [r.verb for r in ours] == ["create", "update", "deletecollection"]
    no_overrides(client)
    emu.reset_requests()
    second = run_window(client, path, "night", journal=journal)
    assert second.noop and writes(emu) == []


def test_every_surge_reserves_from_the_budget_and_gives_it_back(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Each wave reserves its surge (holder run/wave, the plan's need) before any override and
    releases it after; a budget that never has room fails the wave at waveTimeout with no
    override written."""
    from tidal.domain.clock import SystemClock
    from tidal.engine.journal import InMemoryJournal
    from tidal.engine.switch import run_switch
    from tidal.loading import load_schedules

    emu = make_switch_emulator(team([5, 5]))
    client = client_for(emu, tmp_path)
    path = surge_schedule(tmp_path, "waveSize: 1\npauseBetweenWaves: 0s\nwaveTimeout: 2s\n")
    (loaded,) = load_schedules([path]).schedules
    roomy = Ledger(True)
    record = run_switch(
        client, loaded, "night", clock=SystemClock(), journal=InMemoryJournal(), budget=roomy
    )
    assert record.result == "succeeded"
    run = record.run_id
    # wave 2's surge is reserved ahead, once wave 1's is written (tidal.engine.pacing), and
    # again (the same hold) at its own turn
    assert [(verb, f"w{holder.rsplit('/w', 1)[1]}") for verb, holder, _ in roomy.calls] == [
        ("reserve", "w1"),
        ("reserve", "w2"),
        ("running", "w1"),
        ("release", "w1"),
        ("reserve", "w2"),
        ("running", "w2"),
        ("release", "w2"),
    ]
    assert {holder.rsplit("/w", 1)[0] for _verb, holder, _ in roomy.calls} == {f"team-s/{run}"}
    assert roomy.calls[0][2]["cluster-b"][GPU] == 4.0
    assert run_window(client, path, "day").result == "succeeded"
    emu.reset_requests()
    full = Ledger(False)
    record = run_switch(
        client, loaded, "night", clock=SystemClock(), journal=InMemoryJournal(), budget=full
    )
    assert record.result == "failed" and "no room for the wave's surge" in record.reason
    assert "held by other waves" in record.reason  # the clusters had room: the budget had not
    assert not [r for r in writes(emu) if r.resource == "overridepolicies"]


def test_an_override_left_by_a_forgotten_run_is_found_by_its_labels_and_removed(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """An override of this schedule from a run nobody journals any more (raising web-0 in
    cluster-b) is removed by the next run, which says so."""
    import structlog

    from tidal.karmada.overrides import Owner, ReplicaOverride, TemplateRef, apply_override

    emu = make_switch_emulator(team([5, 5]))
    client = client_for(emu, tmp_path)
    owner = Owner("team-s", "20260101-000000-dead", 1)
    apply_override(
        client,
        ReplicaOverride(
            "tidal-team-s-20260101-000000-dead-w1-0",
            owner,
            (TemplateRef("apps/v1", "Deployment", "web-0", NS),),
            {"cluster-b": 5},
        ),
    )
    assert len(list_overrides(client, schedule="team-s")) == 1
    path = surge_schedule(tmp_path, "waveSize: 2\npauseBetweenWaves: 0s\nwaveTimeout: 60s\n")
    with structlog.testing.capture_logs() as logs:
        assert run_window(client, path, "night").result == "succeeded"
    removed = [e for e in logs if e["event"] == "warning" and e.get("code") == "surge_leftover"]
    assert len(removed) == 1 and "20260101-000000-dead" in removed[0]["message"]
    no_overrides(client)


def test_a_wave_whose_surge_never_gets_ready_moves_nothing_and_rolls_back_clean(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """cluster-b's pods fail: wave 1 times out waiting for its raised replicas, nothing was
    touched, the rollback removes the overrides and restores the policy; no replica dipped."""
    emu = make_switch_emulator(team([5, 5]))
    client = client_for(emu, tmp_path)
    path = surge_schedule(
        tmp_path,
        """
        waveSize: 1
        pauseBetweenWaves: 0s
        waveTimeout: 3s
        onFailure: rollback
        floors:
          - minAvailablePercent: 100
    """,
    )
    emu.set_pods_fail("cluster-b")
    day = splits(emu)
    since = emu.clock.now()
    emu.reset_requests()
    record = run_window(client, path, "night")
    assert record.result == "rolledBack", record.to_json()
    assert "surged replicas not ready" in record.waves[0].reason
    assert not [r for r in writes(emu) if r.resource == "deployments"]
    no_overrides(client)
    assert dips(emu, since, day, day) == [] and splits(emu) == day


def test_with_empty_workload_propagation_1_and_2_replica_workloads_are_switched(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """karmada-scheduler --enable-empty-workload-propagation (emulated): 1-2 replica workloads
    (nothing in cluster-b by day) keep a member there to raise. Under 100% available they are
    refused moving directly, and switched with surge, never below their replicas, night and
    day, with no override left."""
    settings = {
        "apiVersion": "sim.tidal.io/v1alpha1",
        "kind": "EmulatorSettings",
        "metadata": {"name": "emulator"},
        "spec": {"emptyWorkloadPropagation": True},
    }
    emu = make_switch_emulator([settings, *team([1, 2, 1, 2])])
    client = client_for(emu, tmp_path)
    kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
    rollout = FULL_AVAILABILITY
    direct = surge_schedule(tmp_path, rollout + "    strategy: direct\n")
    emu.reset_requests()
    assert invoke_cli("plan", direct, kubeconfig).exit_code == 3
    assert not writes(emu)
    path = surge_schedule(tmp_path, rollout)
    day = splits(emu)
    assert all(set(split) == {"cluster-a"} for split in day.values()), day
    night = {w: {"cluster-b": sum(split.values())} for w, split in day.items()}
    switch_without_dips(emu, client, path, "night", day, night)
    assert splits(emu) == night and desired(emu) == night
    switch_without_dips(emu, client, path, "day", night, day)
    assert splits(emu) == day


def test_a_window_in_force_is_no_noop_while_an_override_of_its_schedule_is_left(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """After the night is done, an override left behind (a crashed run's, journal lost) keeps
    web-0 above its share: the same window again is not a no-op; it removes the override and
    writes nothing else."""
    from tidal.karmada.overrides import Owner, ReplicaOverride, TemplateRef, apply_override

    emu = make_switch_emulator(team([5, 5]))
    client = client_for(emu, tmp_path)
    path = surge_schedule(tmp_path, "waveSize: 2\npauseBetweenWaves: 0s\nwaveTimeout: 60s\n")
    assert run_window(client, path, "night").result == "succeeded"
    apply_override(
        client,
        ReplicaOverride(
            "tidal-team-s-20260101-000000-dead-w1-0",
            Owner("team-s", "20260101-000000-dead", 1),
            (TemplateRef("apps/v1", "Deployment", "web-0", NS),),
            {"cluster-b": 7},
        ),
    )
    emu.reset_requests()
    record = run_window(client, path, "night")
    assert record.result == "succeeded" and not record.noop and record.waves == []
    no_overrides(client)
    assert {r.resource for r in writes(emu)} <= {"overridepolicies", "clusterpropagationpolicies"}
