"""Names, labels and small helpers shared by the emulated Karmada controllers."""

from __future__ import annotations

import math
from typing import Any

from tidal_sim.kinds import ResourceType
from tidal_sim.store import NotFound, Store

Obj = dict[str, Any]
# (apiVersion, kind, namespace or "", name): how controllers refer to a template or object.
ObjKey = tuple[str, str, str, str]

PP_ID_LABEL = "propagationpolicy.karmada.io/permanent-id"
CPP_ID_LABEL = "clusterpropagationpolicy.karmada.io/permanent-id"
PP_NAMESPACE_ANNOTATION = "propagationpolicy.karmada.io/namespace"
PP_NAME_ANNOTATION = "propagationpolicy.karmada.io/name"
CPP_NAME_ANNOTATION = "clusterpropagationpolicy.karmada.io/name"
APPLIED_PLACEMENT_ANNOTATION = "policy.karmada.io/applied-placement"
NAMESPACE_SKIP_AUTO_PROPAGATION_LABEL = "namespace.karmada.io/skip-auto-propagation"

POD_STARTUP_ANNOTATION = "sim.tidal.io/pod-startup-seconds"
TERMINATION_ANNOTATION = "sim.tidal.io/termination-seconds"
PODS_FAIL_ANNOTATION = "sim.tidal.io/pods-fail"
DEFAULT_POD_STARTUP_SECONDS = 2.0
DEFAULT_TERMINATION_SECONDS = 0.0

POLICY_GROUP = "policy.karmada.io/v1alpha1"
WORK_GROUP = "work.karmada.io/v1alpha2"
PP_KIND, CPP_KIND = "PropagationPolicy", "ClusterPropagationPolicy"
RB_KIND, CRB_KIND = "ResourceBinding", "ClusterResourceBinding"
REBALANCER_KIND, CLUSTER_KIND = "WorkloadRebalancer", "Cluster"
RIC_KIND = "ResourceInterpreterCustomization"
OP_KIND, COP_KIND, WORK_KIND = "OverridePolicy", "ClusterOverridePolicy", "Work"
NON_TEMPLATE_KINDS = frozenset(
    {
        PP_KIND,
        CPP_KIND,
        OP_KIND,
        COP_KIND,
        WORK_KIND,
        RB_KIND,
        CRB_KIND,
        REBALANCER_KIND,
        CLUSTER_KIND,
        RIC_KIND,
        "CustomResourceDefinition",
        "Namespace",
        "Event",
        "Lease",
    }
)
# Replica-bearing kinds whose status the emulator aggregates like a Deployment.
WORKLOAD_KINDS = frozenset({"Deployment", "StatefulSet"})

FEATURE_POLICY_PREEMPTION = "PropagationPolicyPreemption"


def stored(store: Store, api_version: str, kind: str, name: str) -> tuple[ResourceType, Obj] | None:
    """A cluster-scoped object as stored (read it, never mutate it), with its type; None when
    the kind is not served or the object does not exist."""
    rtype = store.kinds.by_kind(api_version, kind)
    if rtype is None:
        return None
    try:
        return rtype, store.get(rtype, None, name, copy_=False)
    except NotFound:
        return None


def due_time(now: float, delay: float) -> float:
    """now + delay, rounded up to the millisecond (so work due together is batched)."""
    return math.ceil((now + max(0.0, delay)) * 1000.0 - 1e-3) / 1000.0


def clone(value: Any) -> Any:
    """Deep copy of a JSON-like tree (much cheaper than copy.deepcopy)."""
    if type(value) is dict:
        return {k: clone(v) if type(v) in (dict, list) else v for k, v in value.items()}
    if type(value) is list:
        return [clone(v) if type(v) in (dict, list) else v for v in value]
    return value


def is_reserved_namespace(namespace: str) -> bool:
    """Namespaces Karmada's detector ignores."""
    return namespace in ("karmada-system", "karmada-cluster") or namespace.startswith(
        ("karmada-es-", "kube-")
    )


def binding_name(kind: str, name: str) -> str:
    """pkg/util/names GenerateBindingName: lower(<name>-<kind>) with ':' replaced by '.'."""
    return f"{name}-{kind}".lower().replace(":", ".")


def obj_key(obj: Obj) -> ObjKey:
    meta = obj.get("metadata", {})
    return (
        obj.get("apiVersion", ""),
        obj.get("kind", ""),
        meta.get("namespace") or "",
        meta.get("name", ""),
    )


def reference_key(resource: Obj) -> ObjKey:
    """The key of the template a binding's `spec.resource` refers to (as obj_key keys it)."""
    return (
        resource.get("apiVersion", ""),
        resource.get("kind", ""),
        resource.get("namespace") or "",
        resource.get("name", ""),
    )


def type_key(rtype: ResourceType, obj: Obj) -> ObjKey:
    meta = obj.get("metadata", {})
    return (rtype.api_version, rtype.kind, meta.get("namespace") or "", meta.get("name", ""))


def labels_of(obj: Obj) -> dict[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def annotations_of(obj: Obj) -> dict[str, str]:
    return obj.get("metadata", {}).get("annotations") or {}


def set_condition(
    conditions: list[Obj],
    ctype: str,
    status: str,
    reason: str,
    message: str,
    now: str,
    observed_generation: int | None = None,
) -> list[Obj]:
    """meta.SetStatusCondition: lastTransitionTime moves only when the status flips."""
    out = [dict(c) for c in conditions]
    for cond in out:
        if cond.get("type") == ctype:
            if cond.get("status") != status:
                cond["lastTransitionTime"] = now
            cond["status"], cond["reason"], cond["message"] = status, reason, message
            if observed_generation is not None:
                cond["observedGeneration"] = observed_generation
            return out
    new: Obj = {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
    }
    if observed_generation is not None:
        new["observedGeneration"] = observed_generation
    out.append(new)
    return out


def find_condition(obj: Obj, ctype: str) -> Obj | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def cluster_ready(cluster: Obj) -> bool:
    """util.IsClusterReady: only a Ready=True condition; none reported yet means not ready."""
    cond = find_condition(cluster, "Ready")
    return cond is not None and cond.get("status") == "True"


def member_reachable(cluster: Obj) -> bool:
    """Whether the emulated member runs pods: not while Ready is False or Unknown (a cluster
    whose status was never reported is not ready for the scheduler, but its pods still run)."""
    cond = find_condition(cluster, "Ready")
    return cond is None or cond.get("status") == "True"
