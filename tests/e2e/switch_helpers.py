"""Builders for the switch end-to-end tests: topologies, schedule files, clients."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from tidal.domain.clock import SystemClock
from tidal.engine.journal import InMemoryJournal
from tidal.engine.record import RunRecord
from tidal.engine.switch import run_switch
from tidal.karmada.client import KarmadaClient, RetryPolicy
from tidal.loading import load_schedules

NS = "ai-app"


def cluster(name: str, *, cpu: str = "1000", pods: str = "1000", startup: float = 1.0,
            termination: float = 0.0, ready: bool = True, fail: bool = False) -> dict[str, Any]:
    annotations = {"sim.tidal.io/pod-startup-seconds": str(startup),
                   "sim.tidal.io/termination-seconds": str(termination)}
    if fail:
        annotations["sim.tidal.io/pods-fail"] = "true"
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"syncMode": "Push"},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                   "reason": "ClusterReady", "message": "ok"}],
                   "resourceSummary": {"allocatable": {"cpu": cpu, "memory": "4Ti",
                                                       "pods": pods}}},
    }


def static_placement(weights: dict[str, int]) -> dict[str, Any]:
    return {
        "clusterAffinity": {"clusterNames": ["cluster-a", "cluster-b"]},
        "replicaScheduling": {
            "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
            "weightPreference": {"staticWeightList": [
                {"targetCluster": {"clusterNames": [c]}, "weight": w}
                for c, w in weights.items()]}},
    }


def dynamic_placement() -> dict[str, Any]:
    return {
        "clusterAffinity": {"clusterNames": ["cluster-a", "cluster-b"]},
        "replicaScheduling": {
            "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
            "weightPreference": {"dynamicWeight": "AvailableReplicas"}},
    }


def cpp(name: str, team: str, placement: dict[str, Any], *, lazy: bool = False
        ) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": NS,
                               "labelSelector": {"matchLabels": {"team": team}}}],
        "placement": placement,
    }
    if lazy:
        spec["activationPreference"] = "Lazy"
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
            "metadata": {"name": name}, "spec": spec}


def deployment(name: str, team: str, replicas: int, *, cpu: str = "100m",
               annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS, "labels": {"team": team},
                     "annotations": annotations or {}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "x",
                                                       "resources": {"requests": {"cpu": cpu}}}]}}},
    }


def namespace(name: str = NS) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def write_schedule(tmp: Path, body: str, extra: dict[str, str] | None = None) -> Path:
    path = tmp / "schedule.yaml"
    path.write_text(textwrap.dedent(body))
    for rel, text in (extra or {}).items():
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))
    return path


def load_one(path: Path) -> Any:
    result = load_schedules([path])
    assert not result.errors, [str(e) for e in result.errors]
    (loaded,) = result.schedules
    return loaded


def client_for(emulator: Any, tmp: Path, **kw: Any) -> KarmadaClient:
    kubeconfig = emulator.write_kubeconfig(tmp / "kubeconfig")
    kw.setdefault("retry", RetryPolicy(attempts=8, base_delay=0.01, max_delay=0.1,
                                       max_retry_after=0.2))
    return KarmadaClient.from_kubeconfig(kubeconfig, None, **kw)


def switch(client: KarmadaClient, path: Path, window: str, *, journal: InMemoryJournal | None
           = None, events: list[Any] | None = None) -> RunRecord:
    loaded = load_one(path)
    return run_switch(client, loaded, window, clock=SystemClock(),
                      journal=journal or InMemoryJournal(),
                      on_event=events.append if events is not None else None)


def wait_settled(emulator: Any, seconds: float = 1.0) -> None:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.05)
