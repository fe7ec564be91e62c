"""Kinds without replicas over HTTP: ConfigMaps move by health, not by ready replicas."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.switch_helpers import (
    NS,
    MakeEmulator,
    client_for,
    cluster,
    namespace,
    schedule_text,
    switch,
    write_schedule,
)
from tidal.karmada.client import RESOURCE_BINDINGS

pytestmark = pytest.mark.e2e

SCHEDULE = schedule_text(
    "cms",
    windows="""
    - name: night
      start: "23:00"
      policies:
        - kind: ClusterPropagationPolicy
          name: cm-cpp
          patch:
            spec:
              placement:
                clusterAffinity:
                  clusterNames: [cluster-b]
""",
    rollout="""
    waveSize: 2
    pauseBetweenWaves: 0s
    waveTimeout: 10s
    floors:
      - clusters: [cluster-b]
        minReadyReplicas: 1
""",
)


def test_configmaps_switch_by_health(make_switch_emulator: MakeEmulator, tmp_path: Path) -> None:
    """Duplicated ConfigMaps leave cluster-a; replica floors have nothing to count for them."""
    policy = {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "ClusterPropagationPolicy",
        "metadata": {"name": "cm-cpp"},
        "spec": {
            "resourceSelectors": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "namespace": NS,
                    "labelSelector": {"matchLabels": {"team": "t1"}},
                }
            ],
            "placement": {"clusterAffinity": {"clusterNames": ["cluster-a", "cluster-b"]}},
        },
    }
    topo = [
        cluster("cluster-a", startup=0.5),
        cluster("cluster-b", startup=0.5),
        namespace(),
        policy,
    ]
    topo += [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"cm-{i}", "namespace": NS, "labels": {"team": "t1"}},
            "data": {"k": "v"},
        }
        for i in range(3)
    ]
    emu = make_switch_emulator(topo)
    client = client_for(emu, tmp_path)
    record = switch(client, write_schedule(tmp_path, SCHEDULE), "night")
    assert record.result == "succeeded", record.to_json()
    assert [len(w.workloads) for w in record.waves] == [2, 1]
    for i in range(3):
        binding = client.request(
            "get", RESOURCE_BINDINGS, "GET", RESOURCE_BINDINGS.path(NS, f"cm-{i}-configmap")
        )
        assert [c["name"] for c in binding["spec"]["clusters"]] == ["cluster-b"]
