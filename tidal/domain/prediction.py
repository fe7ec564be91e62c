"""Predicted distribution of one workload under a placement, as Karmada's scheduler would do it.

Static weights are exact (the Webster division with the template UID's tie-break, tested
against upstream's worked answers; the emulator has its own implementation). Dynamic weights
and Aggregated are estimates from the Cluster objects at plan time, by the general estimator's
rules (pkg/estimator/client/general.go) of the Karmada release planned for:
- no `pods` in allocatable, or none left, means 0;
- with cluster resource models and status.resourceSummary.allocatableModelings:
  v1.18 and later: each grade is that many nodes holding the grade's minimums (and 110 pods);
  a requested resource the models lack fits nowhere (0, no fallback to the summary);
  v1.17: the lowest grade whose minimums cover every request and the grades above it, each
  node taking at least one replica; a resource the models lack falls back to the summary;
- otherwise the free summary (allocatable - allocated - allocating) per requested resource.
Candidates follow the scheduler's filters: affinity, and readiness except for clusters the
binding already uses (the taint filter skips those, so a NotReady cluster keeps its static
share). `Predictor` deducts what it places so that workloads moving into one cluster compete
for it, and for static weights (which ignore capacity) reports replicas that will not fit.
The scheduler does not see its own placements until the Cluster status is refreshed, so the
workloads of one wave are all estimated from the capacity as it was when the wave started.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from tidal.domain.division import Unschedulable, dynamic_divide, static_weight_divide
from tidal.domain.karmada_release import LATEST_RELEASE, KarmadaRelease
from tidal.domain.selectors import label_selector_matches

_SUFFIX = {
    "": 1.0,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
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


def whole(have: float, need: float) -> int:
    """Whole replicas of `need` in `have`, as upstream's integer (milli)units divide: 2 cpu hold
    200 of 10m, though 2.0 // 0.01 is 199.0 in floating point."""
    return max(0, int(have / need + 1e-9)) if have > 0 else 0


MODEL_NODE_PODS = 110  # pods a model node holds (general.go buildModelNodes)


@dataclass(frozen=True)
class ModelNodes:
    """One resource-model grade as the estimator sees it: `count` nodes with these minimums."""

    count: int
    minimums: Mapping[str, float]


@dataclass(frozen=True)
class ClusterFacts:
    name: str
    ready: bool = True
    labels: Mapping[str, str] = field(default_factory=dict)
    free: Mapping[str, float] = field(default_factory=dict)  # allocatable - allocated - allocating
    # every model grade in grade order (count 0 included); empty: no models or no modelings
    model_nodes: tuple[ModelNodes, ...] = ()

    @classmethod
    def from_cluster(cls, obj: Mapping[str, Any]) -> ClusterFacts:
        meta = obj.get("metadata") or {}
        status = obj.get("status") or {}
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or []
        )
        summary = status.get("resourceSummary") or {}
        free: dict[str, float] = {}
        for name, qty in (summary.get("allocatable") or {}).items():
            used = sum(
                parse_quantity((summary.get(part) or {}).get(name, 0))
                for part in ("allocated", "allocating")
            )
            free[name] = parse_quantity(qty) - used
        return cls(
            str(meta.get("name")),
            ready,
            dict(meta.get("labels") or {}),
            free,
            _model_nodes(
                (obj.get("spec") or {}).get("resourceModels") or [],
                summary.get("allocatableModelings") or [],
            ),
        )


def _model_nodes(
    models: Sequence[Mapping[str, Any]], modelings: Sequence[Mapping[str, Any]]
) -> tuple[ModelNodes, ...]:
    if not models or not modelings:
        return ()
    count_of: dict[int, int] = {}
    for item in modelings:
        grade = int(item.get("grade") or 0)
        count_of[grade] = count_of.get(grade, 0) + int(item.get("count") or 0)
    grades = []
    for model in models:
        grade = int(model.get("grade") or 0)
        minimums = {
            str(r.get("name")): parse_quantity(r.get("min", 0)) for r in model.get("ranges") or []
        }
        grades.append((grade, ModelNodes(count_of.get(grade, 0), minimums)))
    return tuple(nodes for _, nodes in sorted(grades, key=lambda g: g[0]))


def _limits_a_node(resource: str) -> bool:
    """Resources a model node is measured in (cpu, memory, ephemeral storage, extended ones)."""
    return (
        resource in ("cpu", "memory", "ephemeral-storage")
        or "/" in resource
        or resource.startswith(("hugepages-", "attachable-volumes-"))
    )


def model_replicas(nodes: Sequence[ModelNodes], request: Mapping[str, float]) -> int:
    """Replicas of `request` the model nodes hold: per node the fewest of any resource."""
    total = 0
    for grade in nodes:
        fits = [MODEL_NODE_PODS]
        fits += [
            whole(grade.minimums.get(name, 0.0), need)
            for name, need in request.items()
            if need > 0 and _limits_a_node(name)
        ]
        total += grade.count * max(0, min(fits))
    return total


@dataclass(frozen=True)
class WorkloadFacts:
    key: str
    uid: str
    replicas: int | None  # None: a kind without replicas
    current: Mapping[str, int] = field(default_factory=dict)  # binding spec.clusters
    request: Mapping[str, float] = field(default_factory=dict)  # per replica
    # a team estimator's answer per cluster (tidal.domain.team_capacity; -1 or absent: none):
    # karmada-scheduler keeps the minimum of it and the general estimate
    team: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Prediction:
    assignment: dict[str, int]
    exact: bool
    problem: str = ""  # e.g. "unschedulable: ..."
    # static weights only: per destination cluster, resources the moved replicas lack there,
    # and how many of them would stay Pending for it
    short: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    pending: Mapping[str, int] = field(default_factory=dict)


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


def candidates(
    placement: Mapping[str, Any],
    clusters: Sequence[ClusterFacts],
    current: Mapping[str, int] | None = None,
) -> list[str]:
    """Clusters that the placement's (first) cluster affinity admits, by name: ready ones, and
    NotReady ones the binding already uses (pkg/scheduler/framework/plugins/tainttoleration
    skips the taint check for clusters in spec.clusters)."""
    affinity = placement.get("clusterAffinity")
    if affinity is None and placement.get("clusterAffinities"):
        affinity = placement["clusterAffinities"][0]
    used = current or {}
    return sorted(
        c.name for c in clusters if (c.ready or c.name in used) and _matches_affinity(affinity, c)
    )


def static_weights(
    placement: Mapping[str, Any], clusters: Sequence[ClusterFacts]
) -> dict[str, int]:
    rules = ((placement.get("replicaScheduling") or {}).get("weightPreference") or {}).get(
        "staticWeightList"
    ) or []
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


def graded_replicas(nodes: Sequence[ModelNodes], request: Mapping[str, float]) -> int | None:
    """v1.17's estimate from the models: the lowest grade whose minimums meet every request,
    and each grade from there on adding count x per-node fit (at least 1); None when a
    requested resource is missing from the models (upstream then uses the summary)."""
    lowest = 0
    for name, need in request.items():
        minimums = [grade.minimums[name] for grade in nodes if name in grade.minimums]
        if not minimums:
            return None
        meets = next((i for i, least in enumerate(minimums) if least >= need), None)
        if meets is None:
            return 0
        lowest = max(lowest, meets)
    total = 0
    for grade in nodes[lowest:]:
        if grade.count > 0:
            fit = min(whole(grade.minimums.get(name, 0.0), need) for name, need in request.items())
            total += grade.count * max(1, fit)
    return total


def frees_a_grade(nodes: Sequence[ModelNodes], request: Mapping[str, float]) -> bool:
    """Does one replica leaving a node lift it into a higher grade? The status controller
    grades each node by its free resources (pkg/modeling/modeling.go getIndex), so a replica's
    request given back counts only once it crosses the next grade's minimum: certainly when
    consecutive minimums are at most one request apart for every resource the models grade;
    with wider grades (e.g. 0-19 GPUs) the node may well stay where it was."""
    for name, need in request.items():
        minimums = [grade.minimums[name] for grade in nodes if name in grade.minimums]
        if any(upper - lower > need + 1e-9 for lower, upper in pairwise(minimums)):
            return False
    return True


def models_lack(cluster: ClusterFacts, request: Mapping[str, float]) -> list[str]:
    """Requested resources the cluster's resource models grade nowhere: with models, v1.18's
    general estimator fits such a request on no model node (general.go
    getMaximumReplicasBasedOnResourceModels), so it answers 0 for the cluster."""
    if not cluster.model_nodes:
        return []
    graded = {name for grade in cluster.model_nodes for name in grade.minimums}
    return sorted(
        name
        for name, need in request.items()
        if need > 0 and _limits_a_node(name) and name not in graded
    )


def available_replicas(
    free: Mapping[str, float],
    request: Mapping[str, float],
    model_nodes: Sequence[ModelNodes] = (),
    release: KarmadaRelease = LATEST_RELEASE,
    *,
    placed: int = 0,
) -> int:
    """How many more replicas of `request` fit: bounded by the pods left (none reported: 0),
    then by the model nodes when the cluster has them (by `release`'s rules) less `placed`,
    the replicas placed there since they were reported (negative: taken away, which adds room
    only where `frees_a_grade`), else by the free summary (which already counts them)."""
    pods = int(free.get("pods", 0.0))
    if pods <= 0:
        return 0
    wanted = {name: need for name, need in request.items() if need > 0 and name != "pods"}
    if not wanted:
        return min(pods, UNLIMITED)
    if model_nodes:
        if placed < 0 and not frees_a_grade(model_nodes, wanted):
            placed = 0
        if release.at_least(KarmadaRelease.V1_18):
            return max(0, min(pods, model_replicas(model_nodes, wanted) - placed))
        graded = graded_replicas(model_nodes, wanted)
        if graded is not None:
            return max(0, min(pods, graded - placed))
    fits = [pods, UNLIMITED]
    for name, need in wanted.items():
        fits.append(whole(free.get(name, 0.0), need))
    return max(0, min(fits))


def shortfall(
    free: Mapping[str, float], request: Mapping[str, float], replicas: int
) -> dict[str, float]:
    """What `replicas` more of `request` would lack in `free`: resource -> amount missing."""
    if replicas <= 0:
        return {}
    wanted = {**{n: q for n, q in request.items() if q > 0}, "pods": 1.0}
    missing = {}
    for name, need in wanted.items():
        short = need * replicas - max(0.0, free.get(name, 0.0))
        if short > 1e-9:
            missing[name] = short
    return missing


class Predictor:
    """Predicts workloads one after another, deducting their replicas from free capacity.

    Dynamic weights and Aggregated see the capacity as it was when the current wave started
    (`next_wave`): without the alpha gate SchedulingOvercommitProtection the scheduler does
    not deduct its in-flight placements, and the Cluster status that would show them is
    refreshed only every --cluster-status-update-frequency (10 s), so the bindings of one
    wave are all scheduled against the same resourceSummary and allocatableModelings
    (pkg/estimator/client/general.go maxAvailableReplicas). Static weights ignore capacity;
    their replicas compete for it as pods, so their shortfall is counted workload by workload.
    """

    def __init__(
        self,
        placement: Mapping[str, Any],
        clusters: Sequence[ClusterFacts],
        release: KarmadaRelease = LATEST_RELEASE,
    ) -> None:
        self.placement = placement
        self.mode = placement_mode(placement)
        self.release = release
        self.clusters = list(clusters)
        self.candidates = candidates(placement, clusters)
        self._free = {c.name: dict(c.free) for c in clusters}
        self._models = {c.name: c.model_nodes for c in clusters}
        self._placed: dict[str, int] = {}  # replicas this predictor added per cluster
        self._seen_free = {name: dict(free) for name, free in self._free.items()}
        self._seen_placed: dict[str, int] = {}

    def next_wave(self) -> None:
        """The workloads predicted from now on are scheduled in a later wave: the Cluster
        status they are estimated from shows the placements predicted so far."""
        self._seen_free = {name: dict(free) for name, free in self._free.items()}
        self._seen_placed = dict(self._placed)

    def predict(self, workload: WorkloadFacts, *, fresh: bool = True) -> Prediction:
        names = candidates(self.placement, self.clusters, workload.current)
        if workload.replicas is None:
            return Prediction({name: 0 for name in names}, exact=True)
        total = workload.replicas
        if self.mode == "duplicated":
            return Prediction({name: total for name in names}, exact=True)
        if self.mode == "static":
            try:
                weights = static_weights(self.placement, self.clusters)
            except (TypeError, ValueError, KeyError) as exc:  # a server without the CRD schema
                return Prediction(
                    dict(workload.current),
                    exact=False,
                    problem=f"the static weights are not whole numbers: {exc}",
                )
            result = static_weight_divide(total, names, weights, workload.uid)
            short, pending = self._static_shortfall(workload, result)
            self._deduct(workload, {n: r - pending.get(n, 0) for n, r in result.items()})
            return Prediction(result, exact=True, short=short, pending=pending)
        available = []
        for name in names:
            avail = available_replicas(
                self._seen_free.get(name, {}),
                workload.request,
                self._models.get(name, ()),
                self.release,
                placed=self._seen_placed.get(name, 0),
            )
            team = workload.team.get(name, -1)
            available.append((name, avail if team == -1 else min(avail, team)))
        try:
            result = dynamic_divide(
                total,
                available,
                dict(workload.current),
                mode="Fresh" if fresh else "Steady",
                aggregated=self.mode == "aggregated",
                tie_uid=workload.uid,
            )
        except Unschedulable as exc:
            return Prediction(dict(workload.current), exact=False, problem=f"unschedulable: {exc}")
        self._deduct(workload, result)
        return Prediction(result, exact=False)

    def _static_shortfall(
        self, workload: WorkloadFacts, result: Mapping[str, int]
    ) -> tuple[dict[str, dict[str, float]], dict[str, int]]:
        """Static weights ignore free capacity: replicas moved into a full cluster stay Pending.
        Returns the missing resources and the Pending replicas per destination."""
        short, pending = {}, {}
        for name, replicas in result.items():
            free = self._free.get(name)
            moved = replicas - workload.current.get(name, 0)
            if free is None or moved <= 0:
                continue
            missing = shortfall(free, workload.request, moved)
            if missing:
                short[name] = missing
                pending[name] = moved - min(moved, available_replicas(free, workload.request))
        return short, pending

    def _deduct(self, workload: WorkloadFacts, result: Mapping[str, int]) -> None:
        for name in set(result) | set(workload.current):
            replicas = result.get(name, 0)
            delta = replicas - workload.current.get(name, 0)
            self._placed[name] = self._placed.get(name, 0) + delta
            free = self._free.setdefault(name, {})
            for resource, need in workload.request.items():
                free[resource] = free.get(resource, 0.0) - need * delta
            if "pods" in free:
                free["pods"] -= delta
