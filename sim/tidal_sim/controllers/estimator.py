"""Karmada's general replica estimator over a Cluster object, per Karmada version.

pkg/estimator/client/general.go maxAvailableReplicas:
- the pods budget (allocatable - allocated - allocating pods) caps everything; a cluster
  without `pods` in allocatable, or with none left, takes 0;
- with status.resourceSummary.allocatableModelings present (gate CustomizedClusterResourceModeling,
  Beta and on by default since v1.16) the estimate comes from the cluster resource models:
  * v1.18 and later (getMaximumReplicasBasedOnResourceModels -> buildModelNodes +
    SchedulingSimulator): every grade is `count` identical nodes holding the grade's minimums and
    110 pods; replicas are fitted first-fit node by node. A requested resource the models do not
    carry fits nowhere: 0, no fallback.
  * v1.17 and earlier: the lowest grade whose minimums cover every request, then count x
    per-node fit (at least 1) summed over that grade and the ones above; a requested resource
    the models lack is an error and the summary arithmetic below is used instead;
- otherwise the summary: per requested resource (allocatable - allocated - allocating) // request
  (cpu in millicores), 0 when the cluster lacks it or has none left.
"""

from __future__ import annotations

from typing import Any

from tidal_sim.controllers.quantity import Resources, resource_list, to_units
from tidal_sim.version import KarmadaVersion

Obj = dict[str, Any]
MAX_INT32 = 2**31 - 1
PODS_PER_MODEL_NODE = 110
FEATURE_RESOURCE_MODELING = "CustomizedClusterResourceModeling"


class _ModelsLack(Exception):
    """v1.17: the models miss a requested resource (upstream logs it and falls back)."""


def general_estimate(
    cluster: Obj,
    request: Resources,
    version: KarmadaVersion,
    *,
    resource_modeling: bool = True,
) -> int:
    """Replicas of `request` the cluster can still take (the general estimator)."""
    spec = cluster.get("spec") or {}
    summary = (cluster.get("status") or {}).get("resourceSummary")
    if not summary:
        return 0
    allocatable = resource_list(summary.get("allocatable"))
    allocated = resource_list(summary.get("allocated"))
    allocating = resource_list(summary.get("allocating"))
    pods = allocatable.get("pods", 0) - allocated.get("pods", 0) - allocating.get("pods", 0)
    if pods <= 0:
        return 0
    wanted = {name: amount for name, amount in request.items() if amount > 0}
    if not wanted:
        return min(pods, MAX_INT32)
    modelings = summary.get("allocatableModelings") or []
    if resource_modeling and modelings:
        by_models = _by_models(spec.get("resourceModels") or [], modelings, wanted, version)
        if by_models is not None:
            return min(pods, by_models, MAX_INT32)
    return min(_by_summary(pods, wanted, allocatable, allocated, allocating), MAX_INT32)


def _by_models(
    models: list[Obj], modelings: list[Obj], wanted: Resources, version: KarmadaVersion
) -> int | None:
    """Replicas by the resource models (v1.18: model nodes; before: grades); None when the
    models miss a requested resource (upstream falls back to the summary)."""
    try:
        if version >= KarmadaVersion.V1_18:
            return _fit_model_nodes(models, modelings, wanted)
        return _fit_model_grades(models, modelings, wanted)
    except _ModelsLack:
        return None


def _by_summary(
    pods: int,
    wanted: Resources,
    allocatable: Resources,
    allocated: Resources,
    allocating: Resources,
) -> int:
    """Replicas by the resource summary: the scarcest requested resource (0 when one is
    missing or exhausted)."""
    best = pods
    for name, amount in wanted.items():
        if name not in allocatable:
            return 0
        free = allocatable[name] - allocated.get(name, 0) - allocating.get(name, 0)
        if free <= 0:
            return 0
        best = min(best, free // amount)
    return best


def _model_minimums(model: Obj) -> Resources:
    return {
        str(r.get("name")): to_units(str(r.get("name")), r.get("min", 0))
        for r in model.get("ranges") or []
    }


def _counts_by_grade(modelings: list[Obj]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for entry in modelings:
        grade = int(entry.get("grade") or 0)
        counts[grade] = counts.get(grade, 0) + int(entry.get("count") or 0)
    return counts


def _fit_model_nodes(models: list[Obj], modelings: list[Obj], wanted: Resources) -> int:
    if not models:
        raise _ModelsLack("no resource models")  # buildModelNodes errors: the summary is used
    counts = _counts_by_grade(modelings)
    total = 0
    for model in sorted(models, key=lambda m: int(m.get("grade") or 0)):
        nodes = counts.get(int(model.get("grade") or 0), 0)
        if nodes <= 0:
            continue
        node = _model_minimums(model)
        per_node = PODS_PER_MODEL_NODE
        for name, amount in wanted.items():
            if _counted_by_node_fit(name):
                per_node = min(per_node, node.get(name, 0) // amount)
        total += nodes * per_node
    return total


def _counted_by_node_fit(name: str) -> bool:
    """util.Resource.MaxDivided: cpu, memory, ephemeral-storage and scalar (extended,
    hugepages-, attachable-volumes-) resources limit a node; other names are ignored."""
    if name in ("cpu", "memory", "ephemeral-storage"):
        return True
    return "/" in name or name.startswith(("hugepages-", "attachable-volumes-"))


def _fit_model_grades(models: list[Obj], modelings: list[Obj], wanted: Resources) -> int:
    minimums = [_model_minimums(m) for m in models]
    lowest = 0
    for name, amount in wanted.items():
        if not any(name in grade for grade in minimums):
            raise _ModelsLack(name)
        index = next((i for i, grade in enumerate(minimums) if grade.get(name, 0) >= amount), None)
        if index is None:
            return 0
        lowest = max(lowest, index)
    total = 0
    for index in range(lowest, len(minimums)):
        count = int((modelings[index] if index < len(modelings) else {}).get("count") or 0)
        if count == 0:
            continue
        per_node = min(minimums[index].get(name, 0) // amount for name, amount in wanted.items())
        total += count * max(per_node, 1)
    return total
