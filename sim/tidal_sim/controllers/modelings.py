"""status.resourceSummary.allocatableModelings of an emulated member: nodes per model grade.

Upstream (pkg/controllers/status/cluster_status_controller.go getAllocatableModelings,
pkg/modeling/modeling.go getIndex) takes every node's free resources (allocatable minus the
requests of its pods) and counts it in the highest grade whose minimum it meets for every
resource the models name. The emulator has no nodes: a Cluster annotated
`sim.tidal.io/nodes: "N"` is N identical nodes sharing its allocatable, filled one after the
other by what is in use (bin-packing, as GPU platforms schedule). Without the annotation no
modelings are reported, as upstream before its status controller has collected them, and the
estimator uses the resource summary.
"""

from __future__ import annotations

from typing import Any

from tidal_sim.controllers.quantity import Resources, to_units

Obj = dict[str, Any]
NODES_ANNOTATION = "sim.tidal.io/nodes"


def node_count(cluster: Obj) -> int:
    raw = ((cluster.get("metadata") or {}).get("annotations") or {}).get(NODES_ANNOTATION)
    try:
        return max(0, int(str(raw))) if raw is not None else 0
    except ValueError:
        return 0


def allocatable_modelings(
    cluster: Obj, allocatable: Resources, used: Resources
) -> list[Obj] | None:
    """Nodes per grade of spec.resourceModels, or None when the emulator has no node count."""
    models = (cluster.get("spec") or {}).get("resourceModels") or []
    nodes = node_count(cluster)
    if not models or nodes <= 0:
        return None
    minimums = [
        {
            str(r.get("name")): to_units(str(r.get("name")), r.get("min", 0))
            for r in model.get("ranges") or []
        }
        for model in models
    ]
    names = sorted({name for grade in minimums for name in grade})
    counts = [0] * len(models)
    for index in range(nodes):
        free: Resources = {}
        for name in names:
            share = allocatable.get(name, 0) // nodes
            taken = min(share, max(0, used.get(name, 0) - index * share))
            free[name] = share - taken
        grade = _grade_of(free, minimums, names)
        if grade >= 0:
            counts[grade] += 1
    return [
        {"grade": int(model.get("grade") or 0), "count": counts[i]}
        for i, model in enumerate(models)
    ]


def _grade_of(free: Resources, minimums: list[Resources], names: list[str]) -> int:
    """getIndex: per resource the last grade whose minimum the node meets; the lowest wins."""
    best = len(minimums)
    for name in names:
        last = -1
        for index, grade in enumerate(minimums):
            if grade.get(name, 0) <= free.get(name, 0):
                last = index
        best = min(best, last)
    return best
