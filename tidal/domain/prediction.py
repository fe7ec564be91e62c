"""Predicted distribution of one workload under a placement, as Karmada's scheduler would do it.

Static weights are exact (the Webster division with the template UID's tie-break, shared with
the emulator and tested against hand-worked answers). Dynamic weights and Aggregated are
estimates from the Cluster objects' free allocatable capacity at plan time; `Predictor`
deducts what it places so that many workloads moving into one cluster compete for it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tidal.domain.division import Unschedulable, dynamic_divide, static_weight_divide
from tidal.domain.selectors import label_selector_matches

_SUFFIX = {
    "": 1.0, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$")
UNLIMITED = 1_000_000


def parse_quantity(value: object) -> float:
    """A Kubernetes resource quantity ("500m", "32Gi", 4) as a float in base units."""
    if isinstance(value, int | float):
        return float(value)
    match = _QUANTITY.match(str(value).strip())
    if not match:
        raise ValueError(f"not a resource quantity: {value!r}")
    return float(match.group(1)) * _SUFFIX[match.group(2) or ""]


@dataclass(frozen=True)
class ClusterFacts:
    name: str
    ready: bool = True
    labels: Mapping[str, str] = field(default_factory=dict)
    free: Mapping[str, float] = field(default_factory=dict)  # allocatable - allocated - allocating

    @classmethod
    def from_cluster(cls, obj: Mapping[str, Any]) -> ClusterFacts:
        meta = obj.get("metadata") or {}
        status = obj.get("status") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in status.get("conditions") or [])
        summary = status.get("resourceSummary") or {}
        free: dict[str, float] = {}
        for name, qty in (summary.get("allocatable") or {}).items():
            used = sum(parse_quantity((summary.get(part) or {}).get(name, 0))
                       for part in ("allocated", "allocating"))
            free[name] = parse_quantity(qty) - used
        return cls(str(meta.get("name")), ready, dict(meta.get("labels") or {}), free)


@dataclass(frozen=True)
class WorkloadFacts:
    key: str
    uid: str
    replicas: int | None  # None: a kind without replicas
    current: Mapping[str, int] = field(default_factory=dict)  # binding spec.clusters
    request: Mapping[str, float] = field(default_factory=dict)  # per replica


@dataclass(frozen=True)
class Prediction:
    assignment: dict[str, int]
    exact: bool
    problem: str = ""  # e.g. "unschedulable: ..."


def _matches_affinity(affinity: Mapping[str, Any] | None, cluster: ClusterFacts) -> bool:
    if not affinity:
        return True
    if cluster.name in (affinity.get("exclude") or []):
        return False
    names = affinity.get("clusterNames")
    if names and cluster.name not in names:
        return False
    selector = affinity.get("labelSelector")
    return selector is None or label_selector_matches(selector, cluster.labels)


def candidates(placement: Mapping[str, Any], clusters: Sequence[ClusterFacts]) -> list[str]:
    """Ready clusters that the placement's (first) cluster affinity admits, by name."""
    affinity = placement.get("clusterAffinity")
    if affinity is None and placement.get("clusterAffinities"):
        affinity = placement["clusterAffinities"][0]
    return sorted(c.name for c in clusters if c.ready and _matches_affinity(affinity, c))


def static_weights(placement: Mapping[str, Any], clusters: Sequence[ClusterFacts]
                   ) -> dict[str, int]:
    rules = ((placement.get("replicaScheduling") or {}).get("weightPreference") or {}) \
        .get("staticWeightList") or []
    weights: dict[str, int] = {}
    for cluster in clusters:
        for rule in rules:
            if _matches_affinity(rule.get("targetCluster") or {}, cluster):
                weights[cluster.name] = max(weights.get(cluster.name, 0), int(rule["weight"]))
    return weights


def placement_mode(placement: Mapping[str, Any]) -> str:
    """duplicated | static | dynamic | aggregated."""
    rs = placement.get("replicaScheduling") or {}
    if rs.get("replicaSchedulingType", "Divided") == "Duplicated" or not rs:
        return "duplicated"
    if rs.get("replicaDivisionPreference") == "Aggregated":
        return "aggregated"
    if (rs.get("weightPreference") or {}).get("dynamicWeight"):
        return "dynamic"
    return "static"


def available_replicas(free: Mapping[str, float], request: Mapping[str, float]) -> int:
    """How many more replicas of `request` fit into `free` (pods counted when reported)."""
    fits = [UNLIMITED]
    for name, need in request.items():
        if need > 0:
            fits.append(int(max(0.0, free.get(name, 0.0)) // need))
    if "pods" in free:
        fits.append(int(max(0.0, free["pods"])))
    return max(0, min(fits))


class Predictor:
    """Predicts workloads one after another, deducting their replicas from free capacity."""

    def __init__(self, placement: Mapping[str, Any], clusters: Sequence[ClusterFacts]) -> None:
        self.placement = placement
        self.mode = placement_mode(placement)
        self.clusters = list(clusters)
        self.candidates = candidates(placement, clusters)
        self._free = {c.name: dict(c.free) for c in clusters}

    def predict(self, workload: WorkloadFacts, *, fresh: bool = True) -> Prediction:
        if workload.replicas is None:
            return Prediction({name: 0 for name in self.candidates}, exact=True)
        total = workload.replicas
        if self.mode == "duplicated":
            return Prediction({name: total for name in self.candidates}, exact=True)
        if self.mode == "static":
            try:
                weights = static_weights(self.placement, self.clusters)
            except (TypeError, ValueError, KeyError) as exc:  # a server without the CRD schema
                return Prediction(dict(workload.current), exact=False,
                                  problem=f"the static weights are not whole numbers: {exc}")
            return Prediction(
                static_weight_divide(total, self.candidates, weights, workload.uid), exact=True)
        available = []
        for name in self.candidates:
            avail = available_replicas(self._free.get(name, {}), workload.request)
            available.append((name, avail))
        try:
            result = dynamic_divide(total, available, dict(workload.current),
                                    mode="Fresh" if fresh else "Steady",
                                    aggregated=self.mode == "aggregated", tie_uid=workload.uid)
        except Unschedulable as exc:
            return Prediction(dict(workload.current), exact=False,
                              problem=f"unschedulable: {exc}")
        self._deduct(workload, result)
        return Prediction(result, exact=False)

    def _deduct(self, workload: WorkloadFacts, result: Mapping[str, int]) -> None:
        for name, replicas in result.items():
            delta = replicas - workload.current.get(name, 0)
            free = self._free.setdefault(name, {})
            for resource, need in workload.request.items():
                free[resource] = free.get(resource, 0.0) - need * delta
            if "pods" in free:
                free["pods"] -= delta
