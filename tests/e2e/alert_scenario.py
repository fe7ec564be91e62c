"""A small Karmada world for observability end-to-end tests: team 42's two Deployments run in
cluster-a; its night window moves them to cluster-b. With `pods_fail`, cluster-b cannot start
pods (annotation sim.tidal.io/pods-fail), so the first wave times out and the switch halts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.switch_helpers import schedule_text, weights_window

Obj = dict[str, Any]


def deployment(name: str, team: str = "42", replicas: int = 2) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "apps", "labels": {"app": name, "team": team}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, "team": team}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "img:1", "resources": {"requests": {"cpu": "1"}}}
                    ]
                },
            },
        },
    }


def cluster(name: str, fail: bool = False) -> Obj:
    ann = {"sim.tidal.io/pod-startup-seconds": "0", "sim.tidal.io/termination-seconds": "0"}
    if fail:
        ann["sim.tidal.io/pods-fail"] = "true"
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name, "annotations": ann},
        "spec": {"syncMode": "Push"},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "ok"}
            ],
            "resourceSummary": {"allocatable": {"cpu": "100", "memory": "100Gi", "pods": "100"}},
        },
    }


def topology(*, pods_fail: bool = True) -> list[Obj]:
    return [
        {
            "apiVersion": "sim.tidal.io/v1alpha1",
            "kind": "EmulatorSettings",
            "spec": {"schedulerLatencySeconds": 0.0},
        },
        cluster("cluster-a"),
        cluster("cluster-b", fail=pods_fail),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tidal-system"}},
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "ClusterPropagationPolicy",
            "metadata": {"name": "team-42"},
            "spec": {
                "resourceSelectors": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "namespace": "apps",
                        "labelSelector": {"matchLabels": {"team": "42"}},
                    }
                ],
                "placement": {
                    "clusterAffinity": {"clusterNames": ["cluster-a", "cluster-b"]},
                    "replicaScheduling": {
                        "replicaSchedulingType": "Divided",
                        "replicaDivisionPreference": "Weighted",
                        "weightPreference": {
                            "staticWeightList": [
                                {"targetCluster": {"clusterNames": ["cluster-a"]}, "weight": 1}
                            ]
                        },
                    },
                },
            },
        },
        deployment("web-0"),
        deployment("web-1"),
    ]


WINDOWS = weights_window(
    "night", "%(night)s", {"cluster-b": 1}, policy="team-42", trigger="touch"
) + weights_window("day", "%(day)s", {"cluster-a": 1}, policy="team-42", trigger="touch")
SCHEDULE = schedule_text(
    "team-42",
    windows=WINDOWS,
    catch_up_window="30m",
    workloads="""
    - apiVersion: apps/v1
      kind: Deployment
      namespace: apps
      labelSelector:
        matchLabels: {team: "42"}
      readyReplicasField: status.readyReplicas
""",
    rollout="""
    waveSize: {count: 1}
    pauseBetweenWaves: 0s
    waveTimeout: 3s
    onFailure: halt
""",
)


def write_schedule(directory: Path, night: str, day: str) -> Path:
    """Write team-42's schedule with the two windows' local (UTC) start times HH:MM."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "team-42.yaml"
    path.write_text(SCHEDULE % {"night": night, "day": day})
    return path
