"""Swap with rollback over HTTP: the `to` policy is deleted, `from` recreated from its
pre-image, the switched wave moved back, and activationPreference restored."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.switch_helpers import (
    NS,
    client_for,
    cluster,
    cpp,
    deployment,
    namespace,
    static_placement,
    switch,
    write_schedule,
)
from tidal.karmada import policies
from tidal.sim.clock import ScaledClock

pytestmark = pytest.mark.e2e

SCHEDULE = """
apiVersion: tidal.io/v1alpha1
kind: TidalSchedule
metadata: {name: team-swap}
spec:
  timeZone: UTC
  windows:
    - name: night
      start: "23:00"
      policies:
        - kind: ClusterPropagationPolicy
          swap:
            from: day-cpp
            to: night.yaml
  rollout:
    waveSize: 2
    pauseBetweenWaves: 0s
    waveTimeout: 2s
    onFailure: rollback
    floors:
      - clusters: [cluster-b]
        minReadyReplicas: 1
"""

NIGHT = """
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata:
  name: night-cpp
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      namespace: ai-app
      labelSelector:
        matchLabels: {team: t1}
  placement:
    clusterAffinity:
      clusterNames: [cluster-a, cluster-b]
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
          - targetCluster: {clusterNames: [cluster-b]}
            weight: 1
"""
DAY = static_placement({"cluster-a": 4, "cluster-b": 1})


def test_swap_rolls_back_to_the_day_policy(make_emulator: Any, tmp_path: Path) -> None:
    """A swap whose first wave cannot fit is undone: day-cpp back, night-cpp gone, 80/20."""
    topo = [cluster("cluster-a", startup=0.5), cluster("cluster-b", startup=0.5, cpu="6"),
            namespace(), cpp("day-cpp", "t1", DAY)]
    topo += [deployment(f"web-{i}", "t1", 5, cpu="1") for i in range(4)]
    emu = make_emulator(topo, clock=ScaledClock(20.0))
    time.sleep(0.5)
    client = client_for(emu, tmp_path)
    path = write_schedule(tmp_path, SCHEDULE, {"night.yaml": NIGHT})

    record = switch(client, path, "night")

    assert record.result == "rolledBack", record.to_json()
    assert policies.find_policy(client, "ClusterPropagationPolicy", "night-cpp", None) is None
    day = policies.get_policy(client, "ClusterPropagationPolicy", "day-cpp", None)
    assert day["spec"]["placement"] == DAY
    assert "activationPreference" not in day["spec"]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        latest: dict[tuple[str, str], tuple[int, int]] = {}
        for s in emu.timeline():
            latest[(s["workload"], s["cluster"])] = (s["assigned"], s["ready"])
        if all(latest[(f"{NS}/Deployment/web-{i}", "cluster-a")] == (4, 4) for i in range(4)):
            break
        time.sleep(0.05)
    for i in range(4):
        assert latest[(f"{NS}/Deployment/web-{i}", "cluster-a")] == (4, 4)
        assert latest[(f"{NS}/Deployment/web-{i}", "cluster-b")][0] == 1
