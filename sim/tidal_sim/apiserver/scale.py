"""The /scale subresource of Deployments and StatefulSets (autoscaling/v1 Scale), for
`kubectl scale` and autoscalers."""

from __future__ import annotations

from typing import Any

from tidal_sim.kinds import ResourceType
from tidal_sim.labels import SelectorError, from_object, render

Obj = dict[str, Any]
SCALABLE = {("apps", "deployments"), ("apps", "statefulsets")}


def scalable(rtype: ResourceType) -> bool:
    return (rtype.group, rtype.plural) in SCALABLE


def to_scale(obj: Obj) -> Obj:
    meta = obj.get("metadata", {})
    spec = obj.get("spec") or {}
    selector = spec.get("selector") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": spec.get("replicas", 1)},
        "status": {
            "replicas": (obj.get("status") or {}).get("replicas", 0),
            "selector": _query(selector),
        },
    }


def _query(selector: Obj) -> str:
    """The selector as a query string, as the Scale's status carries it ("" when invalid)."""
    try:
        return render(from_object(selector))
    except SelectorError:
        return ""


def apply_scale(obj: Obj, scale: Obj) -> Obj:
    """The object with the Scale's replicas (and its resourceVersion, for the conflict check)."""
    replicas = (scale.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise ValueError(
            f"spec.replicas: Invalid value: {replicas!r}: must be a non-negative integer"
        )
    new = {
        **obj,
        "spec": {**(obj.get("spec") or {}), "replicas": replicas},
        "metadata": dict(obj.get("metadata") or {}),
    }
    rv = (scale.get("metadata") or {}).get("resourceVersion")
    if rv:
        new["metadata"]["resourceVersion"] = rv
    return new
