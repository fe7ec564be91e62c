"""A store, a manual clock and the controllers, with builders for the objects the tests need."""

from __future__ import annotations

import copy
from typing import Any

from tidal_sim.clock import Clock, ManualClock
from tidal_sim.controllers import ControllerManager
from tidal_sim.kinds import KindRegistry, ResourceType
from tidal_sim.store import Store
from tidal_sim.version import LATEST_RELEASE, KarmadaVersion

Obj = dict[str, Any]
EVEN_UID = "00000000-0000-0000-0000-000000000001"  # FNV-32a hash is even: ties go to a, b, ...
ODD_UID = "00000000-0000-0000-0000-000000000002"  # odd: ties go to ..., b, a

API = {
    "Cluster": "cluster.karmada.io/v1alpha1",
    "Namespace": "v1",
    "ConfigMap": "v1",
    "Deployment": "apps/v1",
    "PropagationPolicy": "policy.karmada.io/v1alpha1",
    "ClusterPropagationPolicy": "policy.karmada.io/v1alpha1",
    "ResourceBinding": "work.karmada.io/v1alpha2",
    "ClusterResourceBinding": "work.karmada.io/v1alpha2",
    "WorkloadRebalancer": "apps.karmada.io/v1alpha1",
    "OverridePolicy": "policy.karmada.io/v1alpha1",
    "ClusterOverridePolicy": "policy.karmada.io/v1alpha1",
    "Work": "work.karmada.io/v1alpha1",
}
TWO = {"clusterAffinity": {"clusterNames": ["a", "b"]}}


def static_weights(**weights: int) -> Obj:
    """replicaScheduling dividing by a static weight list, one cluster per entry."""
    return {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {
            "staticWeightList": [
                {"targetCluster": {"clusterNames": [name]}, "weight": weight}
                for name, weight in weights.items()
            ]
        },
    }


def dynamic_weights(preference: str = "Weighted") -> Obj:
    if preference == "Aggregated":
        return {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}
    return {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {"dynamicWeight": "AvailableReplicas"},
    }


def dynamic_pair(a_cpu: str, b_cpu: str, preference: str = "Weighted") -> Harness:
    """Clusters a and b with these cpus, under one dynamic-weight policy "dyn" over both."""
    h = Harness()
    h.cluster("a", cpu=a_cpu)
    h.cluster("b", cpu=b_cpu)
    h.cpp("dyn", {**TWO, "replicaScheduling": dynamic_weights(preference)})
    return h


class Harness:
    def __init__(
        self,
        *,
        feature_gates: frozenset[str] = frozenset(),
        scheduler_latency: float = 0.0,
        clock: Clock | None = None,
        seed: int = 0,
        status_delay: float = 0.0,
        cluster_status_interval: float = 0.0,
        karmada_version: KarmadaVersion = LATEST_RELEASE,
        empty_workload_propagation: bool = False,
        policy_change_lag: float = 0.0,
    ) -> None:
        self.clock = clock or ManualClock()
        self.kinds = KindRegistry()
        self.store = Store(self.kinds, self.clock)
        self.store.preserve_uid = True
        self.mgr = ControllerManager(
            self.store,
            self.clock,
            scheduler_latency=scheduler_latency,
            feature_gates=feature_gates,
            seed=seed,
            status_delay=status_delay,
            cluster_status_interval=cluster_status_interval,
            karmada_version=karmada_version,
            empty_workload_propagation=empty_workload_propagation,
            policy_change_lag=policy_change_lag,
        )
        self.namespace("team")

    # -- plumbing ----------------------------------------------------------------------
    def t(self, kind: str) -> ResourceType:
        rtype = self.kinds.by_kind(API[kind], kind)
        assert rtype is not None
        return rtype

    def settle(self) -> None:
        self.mgr.run_until_idle()

    def advance(self, seconds: float) -> None:
        """Move the ManualClock on (running due timers), then settle."""
        if not isinstance(self.clock, ManualClock):
            raise TypeError("advance() needs the harness to run on a ManualClock")
        self.clock.advance(seconds)
        self.settle()

    def get(self, kind: str, name: str, namespace: str | None = None) -> Obj:
        return self.store.get(self.t(kind), namespace, name)

    def patch(self, kind: str, name: str, change: Any, namespace: str | None = None) -> Obj:
        return self.store.mutate(self.t(kind), namespace, name, change)

    # -- builders ----------------------------------------------------------------------
    def namespace(self, name: str) -> None:
        self.store.create(self.t("Namespace"), {"metadata": {"name": name}})

    def cluster(
        self,
        name: str,
        *,
        cpu: str = "100",
        memory: str = "100Gi",
        pods: str = "110",
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        ready: bool | None = None,
    ) -> Obj:
        status: Obj = {
            "resourceSummary": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}}
        }
        if ready is not None:
            status["conditions"] = [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "Test",
                    "message": "",
                    "lastTransitionTime": self.clock.rfc3339(),
                }
            ]
        obj = {
            "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
            "spec": {"syncMode": "Push"},
            "status": status,
        }
        return self.store.create(self.t("Cluster"), obj)

    def set_allocatable(self, name: str, **resources: str) -> None:
        def change(obj: Obj) -> None:
            obj["status"]["resourceSummary"]["allocatable"].update(resources)

        self.store.mutate(self.t("Cluster"), None, name, change, subresource="status")

    def cpp(
        self, name: str, placement: Obj, *, selectors: list[Obj] | None = None, **spec: Any
    ) -> Obj:
        body = {
            "metadata": {"name": name},
            "spec": {
                "resourceSelectors": selectors or [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "placement": copy.deepcopy(placement),
                **spec,
            },
        }
        return self.store.create(self.t("ClusterPropagationPolicy"), body)

    def pp(
        self,
        name: str,
        placement: Obj,
        *,
        namespace: str = "team",
        selectors: list[Obj] | None = None,
        **spec: Any,
    ) -> Obj:
        body = {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "resourceSelectors": selectors or [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "placement": copy.deepcopy(placement),
                **spec,
            },
        }
        return self.store.create(self.t("PropagationPolicy"), body)

    def deployment(
        self,
        name: str,
        replicas: int = 3,
        *,
        namespace: str = "team",
        cpu: str = "100m",
        memory: str = "128Mi",
        uid: str | None = None,
        labels: dict[str, str] | None = None,
    ) -> Obj:
        meta: Obj = {"name": name, "namespace": namespace, "labels": labels or {"app": name}}
        if uid:
            meta["uid"] = uid
        body = {
            "metadata": meta,
            "spec": {
                "replicas": replicas,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "main",
                                "resources": {"requests": {"cpu": cpu, "memory": memory}},
                            }
                        ]
                    }
                },
            },
        }
        return self.store.create(self.t("Deployment"), body)

    def trigger_reschedule(self, name: str, stamp: str, namespace: str = "team") -> None:
        """Stamp spec.rescheduleTriggeredAt on the Deployment's binding, as a Fresh request."""
        self.patch(
            "ResourceBinding",
            f"{name}-deployment",
            lambda b: b["spec"].update(rescheduleTriggeredAt=stamp),
            namespace,
        )

    # -- views -------------------------------------------------------------------------
    def binding(self, name: str, namespace: str = "team", kind: str = "Deployment") -> Obj:
        return self.get("ResourceBinding", f"{name}-{kind}".lower(), namespace)

    def clusters_of(self, name: str, namespace: str = "team") -> dict[str, int]:
        spec = self.binding(name, namespace)["spec"]
        return {c["name"]: c.get("replicas", 0) for c in spec.get("clusters") or []}

    def condition(self, obj: Obj, ctype: str) -> Obj | None:
        for cond in (obj.get("status") or {}).get("conditions") or []:
            if cond["type"] == ctype:
                return dict(cond)
        return None

    def present_condition(self, obj: Obj, ctype: str) -> Obj:
        """The condition of type `ctype`, which the object must have."""
        cond = self.condition(obj, ctype)
        assert cond is not None, f"no {ctype} condition in {obj.get('status')}"
        return cond

    def ready_in(self, name: str, cluster: str, namespace: str = "team") -> int:
        current = self.mgr.timeline.current()
        return current.get((f"{namespace}/Deployment/{name}", cluster), (0, 0))[1]
