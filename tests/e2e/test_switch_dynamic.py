"""DynamicWeight team over HTTP: swap day -> night policy (same placement) and rebalance in
waves after cluster-a's capacity shrinks; one WorkloadRebalancer per wave, never two waves'."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.switch_helpers import (
    MakeEmulator,
    client_for,
    cluster,
    cpp,
    deployment,
    dynamic_placement,
    latest,
    namespace,
    policy_file,
    schedule_text,
    swap_window,
    switch,
    write_schedule,
)
from tidal.engine import events as ev
from tidal.karmada import policies
from tidal.karmada.client import CLUSTERS, WORKLOAD_REBALANCERS
from tidal.karmada.errors import NotFound
from tidal.karmada.policies import MERGE_PATCH
from tidal_sim.emulator import Emulator

pytestmark = pytest.mark.e2e

SCHEDULE = schedule_text(
    "team-dyn",
    windows=swap_window(
        "night", "22:00", swap_from="dyn-day", swap_to="policies/dyn-night.yaml", trigger="auto"
    ),
    rollout="""
    waveSize: 25%
    pauseBetweenWaves: 0s
    waveTimeout: 30s
""",
)


def _assigned(emu: Emulator) -> dict[str, int]:
    out: dict[str, int] = {}
    for (_, c), (n, _) in latest(emu).items():
        out[c] = out.get(c, 0) + n
    return out


@pytest.mark.parametrize(("lazy_night", "trigger"), [(False, "rebalance"), (True, "both")])
def test_swap_and_rebalance_waves_after_capacity_shrinks(
    make_switch_emulator: MakeEmulator, tmp_path: Path, lazy_night: bool, trigger: str
) -> None:
    """Rebalance waves move replicas off the shrunken cluster, one rebalancer per wave."""
    topo = [
        cluster("cluster-a", cpu="40", startup=0.5),
        cluster("cluster-b", cpu="40", startup=0.5),
        namespace(),
        cpp("dyn-day", "t2", dynamic_placement(), lazy=True),
    ]
    topo += [deployment(f"job-{i}", "t2", 4, cpu="1") for i in range(8)]
    emu = make_switch_emulator(topo)
    before = _assigned(emu)
    assert before.get("cluster-a", 0) > 8
    client = client_for(emu, tmp_path)
    body = {
        "status": {
            "resourceSummary": {"allocatable": {"cpu": "4", "memory": "4Ti", "pods": "1000"}}
        }
    }
    try:
        client.request(
            "patch",
            CLUSTERS,
            "PATCH",
            CLUSTERS.path(name="cluster-a", subresource="status"),
            body=body,
            content_type=MERGE_PATCH,
        )
    except NotFound:
        client.request(
            "patch",
            CLUSTERS,
            "PATCH",
            CLUSTERS.path(name="cluster-a"),
            body=body,
            content_type=MERGE_PATCH,
        )
    time.sleep(0.2)
    night = policy_file(cpp("dyn-night", "t2", dynamic_placement(), lazy=lazy_night))
    path = write_schedule(tmp_path, SCHEDULE, {"policies/dyn-night.yaml": night})

    rebalancers: dict[str, dict[str, Any]] = {}

    started: list[Any] = []

    def on_event(event: Any) -> None:
        if isinstance(event, ev.RunStarted):
            started.append(event)
        if isinstance(event, ev.WaveFinished):
            listing = client.request(
                "list", WORKLOAD_REBALANCERS, "GET", WORKLOAD_REBALANCERS.path()
            )
            rebalancers.update({rb["metadata"]["name"]: rb for rb in listing["items"]})

    record = switch(client, path, "night", on_event=on_event)

    assert record.result == "succeeded", record.to_json()
    assert [e.trigger for e in started] == [trigger]
    assert len(record.waves) == 4
    assert policies.find_policy(client, "ClusterPropagationPolicy", "dyn-day", None) is None
    assert policies.find_policy(client, "ClusterPropagationPolicy", "dyn-night", None)
    assert len(rebalancers) >= 4
    left = client.request("list", WORKLOAD_REBALANCERS, "GET", WORKLOAD_REBALANCERS.path())
    assert left["items"] == []  # temporary objects removed at the end
    waves = [set(w.workloads) for w in record.waves]
    for rb in rebalancers.values():
        names = {f"{w['namespace']}/{w['kind']}/{w['name']}" for w in rb["spec"]["workloads"]}
        assert sum(1 for wave in waves if names <= wave) == 1, rb["metadata"]["name"]
    after = _assigned(emu)
    assert after.get("cluster-a", 0) < before["cluster-a"]


def test_rebalance_left_unschedulable_fails_the_wave_at_once(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """A Fresh rebalance the estimators cannot fit (the team estimator gives the team no room
    anywhere) fails wave 1 in seconds as `unschedulable`, naming the workload and the
    scheduler's message, not at waveTimeout (60 s). Upstream: patchBindingStatusCondition
    leaves schedulerObservedGeneration behind on failure (pkg/scheduler/scheduler.go)."""
    settings = {
        "apiVersion": "sim.tidal.io/v1alpha1",
        "kind": "EmulatorSettings",
        "spec": {
            "teamEstimator": {
                "teams": [
                    {
                        "name": f"t2@{c}",
                        "cluster": c,
                        "replicas": 100,
                        "teamSelector": {"matchLabels": {"team": "t2"}},
                    }
                    for c in ("cluster-a", "cluster-b")
                ]
            }
        },
    }
    topo = [
        settings,
        cluster("cluster-a", cpu="40", startup=0.2),
        cluster("cluster-b", cpu="40", startup=0.2),
        namespace(),
        cpp("dyn-day", "t2", dynamic_placement(), lazy=True),
    ]
    topo += [deployment(f"job-{i}", "t2", 2, cpu="1") for i in range(2)]
    emu = make_switch_emulator(topo)
    for c in ("cluster-a", "cluster-b"):
        emu.set_team_capacity(f"t2@{c}", 0)
    client = client_for(emu, tmp_path)
    night = policy_file(cpp("dyn-night", "t2", dynamic_placement()))
    schedule = schedule_text(
        "team-dyn",
        windows=swap_window(
            "night",
            "22:00",
            swap_from="dyn-day",
            swap_to="policies/dyn-night.yaml",
            trigger="rebalance",
        ),
        rollout="waveSize: 1\npauseBetweenWaves: 0s\nwaveTimeout: 60s\n",
    )
    path = write_schedule(tmp_path, schedule, {"policies/dyn-night.yaml": night})
    events: list[Any] = []
    began = time.monotonic()
    record = switch(client, path, "night", events=events)
    assert time.monotonic() - began < 20
    assert record.result == "failed"
    finished = [e for e in events if isinstance(e, ev.WaveFinished)]
    assert [(e.wave, e.failure) for e in finished] == [(1, "unschedulable")]
    assert "job-" in finished[0].reason and "not enough to schedule" in finished[0].reason
