"""Selection over HTTP: excluded, foreign and unclaimed templates are reported and left out;
an excluded template claimed by a changed policy keeps the policy Lazy after the switch."""

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
    load_one,
    namespace,
    static_placement,
    switch,
    write_schedule,
)
from tidal.engine import events as ev
from tidal.engine.planning import build_plan
from tidal.karmada import policies
from tidal.sim.clock import ScaledClock

pytestmark = pytest.mark.e2e

SCHEDULE = """
apiVersion: tidal.io/v1alpha1
kind: TidalSchedule
metadata: {name: team-sel}
spec:
  timeZone: UTC
  workloads:
    - apiVersion: apps/v1
      kind: Deployment
      namespace: ai-app
      labelSelector:
        matchExpressions:
          - {key: team, operator: In, values: [t1, t2, t3]}
  windows:
    - name: night
      start: "23:00"
      policies:
        - kind: ClusterPropagationPolicy
          name: team-cpp
          patch:
            spec:
              placement:
                replicaScheduling:
                  weightPreference:
                    staticWeightList:
                      - targetCluster: {clusterNames: [cluster-b]}
                        weight: 1
  rollout:
    waveSize: 2
    pauseBetweenWaves: 0s
    waveTimeout: 20s
"""
DAY = static_placement({"cluster-a": 4, "cluster-b": 1})


def test_excluded_foreign_and_unclaimed_are_left_out(make_emulator: Any, tmp_path: Path) -> None:
    """Only claimed, bound, not excluded templates move; the policy stays Lazy for web-3."""
    topo = [cluster("cluster-a", startup=0.5), cluster("cluster-b", startup=0.5), namespace(),
            cpp("team-cpp", "t1", DAY), cpp("other-cpp", "t2", DAY)]
    topo += [deployment(f"web-{i}", "t1", 5) for i in range(3)]
    topo += [deployment("web-3", "t1", 5, annotations={"tidal.io/exclude": "true"}),
             deployment("foreign-0", "t2", 5), deployment("loose-0", "t3", 5)]
    emu = make_emulator(topo, clock=ScaledClock(20.0))
    time.sleep(0.5)
    client = client_for(emu, tmp_path)
    path = write_schedule(tmp_path, SCHEDULE)

    sp = build_plan(client, load_one(path).schedule, "night")
    assert [w.name for w in sp.pending] == [f"{NS}/Deployment/web-{i}" for i in range(3)]
    reasons = {s.workload: s.reason for s in sp.selection.skipped}
    assert reasons == {f"{NS}/Deployment/web-3": "excluded",
                       f"{NS}/Deployment/foreign-0": "foreign",
                       f"{NS}/Deployment/loose-0": "unbound"}
    assert any("give them their own policy" in w for w in sp.warnings)

    events: list[Any] = []
    record = switch(client, path, "night", events=events)
    assert record.result == "succeeded", record.to_json()
    assert sorted(n for w in record.waves for n in w.workloads) == [
        f"{NS}/Deployment/web-{i}" for i in range(3)]
    assert any("stays Lazy" in w for w in record.warnings)
    policy = policies.get_policy(client, "ClusterPropagationPolicy", "team-cpp", None)
    assert policy["spec"]["activationPreference"] == "Lazy"
    assert not [e for e in events if isinstance(e, ev.PolicyChanged)
                and e.action == "lazy_restored"]
    latest: dict[tuple[str, str], int] = {}
    for s in emu.timeline():
        latest[(s["workload"], s["cluster"])] = s["assigned"]
    assert latest[(f"{NS}/Deployment/web-3", "cluster-a")] == 4  # excluded: not moved
    assert latest[(f"{NS}/Deployment/foreign-0", "cluster-a")] == 4
    assert latest[(f"{NS}/Deployment/web-0", "cluster-b")] == 5
