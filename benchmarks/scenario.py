"""Synthetic control planes for the benchmarks: member clusters, a team policy, N Deployments.

Everything is built as plain manifests (a topology list) so each arm of a benchmark starts
from an identical fresh emulator.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
NAMESPACE = "ai-app"
CPP_API = "policy.karmada.io/v1alpha1"


@dataclass(frozen=True)
class Fleet:
    """What to build: how many workloads, their replica range, and member timing."""

    workloads: int = 60
    teams: tuple[str, ...] = ("1005", "2001", "3007")
    min_replicas: int = 1
    max_replicas: int = 8
    startup_seconds: float = 5.0
    termination_seconds: float = 2.0
    gpu_a: int = 400
    gpu_b: int = 330
    seed: int = 7
    scheduler_latency: float = 0.1
    first: int = 0  # index of the first workload (to add more to a populated emulator)


def settings(latency: float, *, empty_workload_propagation: bool = False) -> Obj:
    spec: Obj = {"schedulerLatencySeconds": latency}
    if empty_workload_propagation:  # karmada-scheduler --enable-empty-workload-propagation
        spec["emptyWorkloadPropagation"] = True
    return {"apiVersion": "sim.tidal.io/v1alpha1", "kind": "EmulatorSettings", "spec": spec}


def cluster(name: str, gpus: int, startup: float, termination: float) -> Obj:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {
            "name": name,
            "annotations": {
                "sim.tidal.io/pod-startup-seconds": f"{startup:g}",
                "sim.tidal.io/termination-seconds": f"{termination:g}",
            },
        },
        "spec": {"syncMode": "Push"},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "ready"}
            ],
            "resourceSummary": {
                "allocatable": {
                    "cpu": str(gpus * 8),
                    "memory": f"{gpus * 64}Gi",
                    "nvidia.com/gpu": str(gpus),
                    "pods": str(gpus * 4),
                }
            },
        },
    }


def static_placement(weights: dict[str, int]) -> Obj:
    return {
        "clusterAffinity": {"clusterNames": sorted(weights)},
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {
                "staticWeightList": [
                    {"targetCluster": {"clusterNames": [c]}, "weight": w}
                    for c, w in sorted(weights.items())
                    if w > 0
                ]
            },
        },
    }


def dynamic_placement(clusters: list[str]) -> Obj:
    return {
        "clusterAffinity": {"clusterNames": sorted(clusters)},
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {"dynamicWeight": "AvailableReplicas"},
        },
    }


def cpp(
    name: str,
    placement: Obj,
    *,
    selector: Obj | None = None,
    lazy: bool = False,
    namespace: str = NAMESPACE,
) -> Obj:
    chooser: Obj = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": namespace}
    if selector:
        chooser["labelSelector"] = {"matchLabels": selector}
    spec: Obj = {
        "resourceSelectors": [chooser],
        "placement": placement,
    }
    if lazy:
        spec["activationPreference"] = "Lazy"
    return {
        "apiVersion": CPP_API,
        "kind": "ClusterPropagationPolicy",
        "metadata": {"name": name},
        "spec": spec,
    }


def deployment(
    name: str, replicas: int, team: str, *, gpu: bool = True, namespace: str = NAMESPACE
) -> Obj:
    requests = {"cpu": "4", "memory": "16Gi", **({"nvidia.com/gpu": "1"} if gpu else {})}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app": name, "atms-app/teamid": team, "tier": "inference"},
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, "atms-app/teamid": team}},
                "spec": {
                    "containers": [
                        {
                            "name": "server",
                            "image": "registry.example.com/llm:1",
                            "resources": {"requests": requests},
                        }
                    ]
                },
            },
        },
    }


def replica_counts(fleet: Fleet) -> list[int]:
    rng = random.Random(fleet.seed + fleet.first)
    return [rng.randint(fleet.min_replicas, fleet.max_replicas) for _ in range(fleet.workloads)]


def workload_names(fleet: Fleet) -> list[tuple[str, str]]:
    """(name, team) per workload, teams in turn."""
    teams = fleet.teams
    return [
        (f"llm-{teams[i % len(teams)]}-{i:05d}", teams[i % len(teams)])
        for i in range(fleet.first, fleet.first + fleet.workloads)
    ]


def topology(
    fleet: Fleet, policies: list[Obj], *, gpu: bool = True, empty_workload_propagation: bool = False
) -> list[Obj]:
    """Clusters, namespace, the given policies, then the Deployments."""
    docs: list[Obj] = [
        settings(fleet.scheduler_latency, empty_workload_propagation=empty_workload_propagation),
        cluster("cluster-a", fleet.gpu_a, fleet.startup_seconds, fleet.termination_seconds),
        cluster("cluster-b", fleet.gpu_b, fleet.startup_seconds, fleet.termination_seconds),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
    ]
    docs.extend(policies)
    for (name, team), replicas in zip(workload_names(fleet), replica_counts(fleet), strict=True):
        docs.append(deployment(name, replicas, team, gpu=gpu))
    return docs


def populate(emu: Any, fleet: Fleet, policy: Obj, assignment: dict[str, float]) -> None:
    """Fill an emulator that runs WITHOUT controllers with what Karmada would have made by now:
    the claimed Deployments and their scheduled, converged ResourceBindings. Direct store
    writes, so 50,000 workloads take seconds instead of minutes of controller work.

    `assignment` gives each cluster's share of every workload's replicas (largest remainder)."""
    kinds = emu.kinds
    cpp_type = kinds.by_kind(CPP_API, "ClusterPropagationPolicy")
    dep_type = kinds.by_kind("apps/v1", "Deployment")
    rb_type = kinds.by_kind("work.karmada.io/v1alpha2", "ResourceBinding")
    ns_type = kinds.by_kind("v1", "Namespace")
    store = emu.store
    if not _exists(store, ns_type, None, NAMESPACE):
        store.create(ns_type, {"metadata": {"name": NAMESPACE}, "status": {"phase": "Active"}})
    pid = f"bench-{policy['metadata']['name']}"
    id_label = {"clusterpropagationpolicy.karmada.io/permanent-id": pid}
    policy = {**policy, "metadata": {**policy["metadata"], "labels": id_label}}
    if not _exists(store, cpp_type, None, policy["metadata"]["name"]):
        store.create(cpp_type, policy)
    claim = {"clusterpropagationpolicy.karmada.io/permanent-id": pid}
    claim_note = {"clusterpropagationpolicy.karmada.io/name": policy["metadata"]["name"]}
    now = emu.clock.rfc3339()
    placement = policy["spec"]["placement"]
    for (name, team), replicas in zip(workload_names(fleet), replica_counts(fleet), strict=True):
        dep = deployment(name, replicas, team)
        dep["metadata"]["labels"].update(claim)
        dep["metadata"]["annotations"] = dict(claim_note)
        dep["status"] = {
            "replicas": replicas,
            "readyReplicas": replicas,
            "updatedReplicas": replicas,
            "availableReplicas": replicas,
            "observedGeneration": 1,
        }
        stored = store.create(dep_type, dep)
        split = _split(replicas, assignment)
        binding = {
            "metadata": {
                "name": f"{name}-deployment",
                "namespace": NAMESPACE,
                "labels": dict(claim),
                "annotations": dict(claim_note),
            },
            "spec": {
                "resource": {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "namespace": NAMESPACE,
                    "name": name,
                    "uid": stored["metadata"]["uid"],
                    "resourceVersion": stored["metadata"]["resourceVersion"],
                },
                "placement": placement,
                "replicas": replicas,
                "replicaRequirements": {
                    "resourceRequest": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}
                },
                "clusters": [{"name": c, "replicas": r} for c, r in split.items() if r],
            },
            "status": {
                "schedulerObservedGeneration": 1,
                "lastScheduledTime": now,
                "conditions": [
                    {
                        "type": "Scheduled",
                        "status": "True",
                        "reason": "Success",
                        "message": "",
                        "lastTransitionTime": now,
                    }
                ],
                "aggregatedStatus": [
                    {
                        "clusterName": c,
                        "applied": True,
                        "health": "Healthy",
                        "status": {
                            "replicas": r,
                            "updatedReplicas": r,
                            "readyReplicas": r,
                            "availableReplicas": r,
                            "observedGeneration": 1,
                            "generation": 1,
                            "resourceTemplateGeneration": 1,
                        },
                    }
                    for c, r in split.items()
                    if r
                ],
            },
        }
        store.create(rb_type, binding)


def _split(replicas: int, shares: dict[str, float]) -> dict[str, int]:
    raw = {c: replicas * s for c, s in shares.items()}
    out = {c: int(v) for c, v in raw.items()}
    rest = replicas - sum(out.values())
    for c in sorted(raw, key=lambda c: raw[c] - out[c], reverse=True)[:rest]:
        out[c] += 1
    return out


def _exists(store: Any, rtype: Any, namespace: str | None, name: str) -> bool:
    try:
        store.get(rtype, namespace, name, copy_=False)
    except Exception:
        return False
    return True
