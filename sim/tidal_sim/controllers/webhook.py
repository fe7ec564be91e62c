"""Admission of policies and clusters: what the apiserver and Karmada's webhooks fill in.

Applied in the order a real write meets them, after any CRD schema defaults the validator
already applied (it only has them when the upstream CRDs are found, so the schema defaults
the switch depends on are repeated here):

1. CRD schema defaults (crds/policy.karmada.io_*propagationpolicies.yaml): spec.priority 0,
   conflictResolution Abort, preemption Never, schedulerName default-scheduler,
   placement.replicaScheduling.replicaSchedulingType Divided.
2. karmada-webhook, pkg/webhook/(cluster)propagationpolicy/mutating.go: resourceSelectors of a
   PropagationPolicy get its namespace; spread constraints get spreadByField cluster and
   minGroups 1 (helper.SetDefaultSpreadConstraints); a Divided placement without a
   replicaDivisionPreference gets Weighted (helper.SetReplicaDivisionPreferenceWeighted); on
   create the permanent-id label is set to a new UUID, whatever the request carried.
   pkg/webhook/overridepolicy/mutating.go: an OverridePolicy's resourceSelectors get its
   namespace too.
3. karmada-aggregated-apiserver, pkg/apis/cluster/mutation/mutation.go: a Cluster created without
   spec.resourceModels gets the default cpu/memory grades (gate CustomizedClusterResourceModeling,
   on by default).
"""

from __future__ import annotations

import uuid
from typing import Any

from tidal_sim.controllers.common import (
    CLUSTER_KIND,
    CPP_ID_LABEL,
    CPP_KIND,
    OP_KIND,
    PP_ID_LABEL,
    PP_KIND,
)
from tidal_sim.kinds import ResourceType

Obj = dict[str, Any]
_SPEC_DEFAULTS = (
    ("priority", 0),
    ("conflictResolution", "Abort"),
    ("preemption", "Never"),
    ("schedulerName", "default-scheduler"),
)
# Default grades: cpu cores and memory GiB (min, max); the last grade has no upper bound.
_DEFAULT_GRADES = (
    (0, 1, 0, 4),
    (1, 2, 4, 16),
    (2, 4, 16, 32),
    (4, 8, 32, 64),
    (8, 16, 64, 128),
    (16, 32, 128, 256),
    (32, 64, 256, 512),
    (64, 128, 512, 1024),
    (128, None, 1024, None),
)


def default_resource_models() -> list[Obj]:
    """SetDefaultClusterResourceModels: nine cpu/memory grades (the top one unbounded)."""
    models = []
    for grade, (cpu_min, cpu_max, mem_min, mem_max) in enumerate(_DEFAULT_GRADES):
        ranges = [
            {"name": "cpu", "min": str(cpu_min), "max": str(cpu_max) if cpu_max else _MAX_QTY},
            {
                "name": "memory",
                "min": f"{mem_min}Gi",
                "max": f"{mem_max}Gi" if mem_max else _MAX_QTY,
            },
        ]
        models.append({"grade": grade, "ranges": ranges})
    return models


_MAX_QTY = "9223372036854775807"  # math.MaxInt64, upstream's open upper bound


def karmada_admission(rtype: ResourceType, old: Obj | None, new: Obj) -> None:
    """Store admission hook: defaults of policies (create and update) and clusters (create)."""
    if rtype.group == "policy.karmada.io" and rtype.kind in (PP_KIND, CPP_KIND):
        _default_policy(rtype.kind, old, new)
    elif rtype.group == "policy.karmada.io" and rtype.kind == OP_KIND:
        namespace = (new.get("metadata") or {}).get("namespace")
        spec = new.get("spec")
        for selector in (spec.get("resourceSelectors") or []) if isinstance(spec, dict) else []:
            if isinstance(selector, dict) and not selector.get("namespace"):
                selector["namespace"] = namespace
    elif rtype.kind == CLUSTER_KIND and rtype.group == "cluster.karmada.io" and old is None:
        spec = new.setdefault("spec", {})
        if not spec.get("resourceModels"):
            spec["resourceModels"] = default_resource_models()


def _default_policy(kind: str, old: Obj | None, new: Obj) -> None:
    spec = new.get("spec")
    if isinstance(spec, dict):
        for key, value in _SPEC_DEFAULTS:
            spec.setdefault(key, value)
        namespace = (new.get("metadata") or {}).get("namespace")
        for selector in spec.get("resourceSelectors") or []:
            if kind == PP_KIND and isinstance(selector, dict) and not selector.get("namespace"):
                selector["namespace"] = namespace
        placement = spec.get("placement")
        if isinstance(placement, dict):
            _default_placement(placement)
    label = PP_ID_LABEL if kind == PP_KIND else CPP_ID_LABEL
    meta = new.setdefault("metadata", {})
    labels = meta.get("labels") or {}
    meta["labels"] = labels
    if old is None:
        labels[label] = str(uuid.uuid4())


def _default_placement(placement: Obj) -> None:
    for constraint in placement.get("spreadConstraints") or []:
        if not isinstance(constraint, dict):
            continue
        if not constraint.get("spreadByField") and not constraint.get("spreadByLabel"):
            constraint["spreadByField"] = "cluster"
        if not constraint.get("minGroups"):
            constraint["minGroups"] = 1
    strategy = placement.get("replicaScheduling")
    if not isinstance(strategy, dict):
        return
    strategy.setdefault("replicaSchedulingType", "Divided")
    if strategy["replicaSchedulingType"] == "Divided" and not strategy.get(
        "replicaDivisionPreference"
    ):
        strategy["replicaDivisionPreference"] = "Weighted"
