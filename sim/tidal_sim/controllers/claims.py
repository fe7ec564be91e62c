"""What the detector writes: claim metadata, binding specs, and Karmada's event filter.

pkg/detector/claim.go, BuildResourceBinding/CreateOrUpdate in detector.go, the default replica
interpreter (pkg/resourceinterpreter/default/native), and pkg/util/eventfilter: a change counts
as the user's only if something other than status, managedFields, resourceVersion, generation
and labels/annotations whose key contains `.karmada.io` changed.
"""

from __future__ import annotations

from tidal_sim.controllers.common import (
    CPP_ID_LABEL,
    CPP_NAME_ANNOTATION,
    NAMESPACE_SKIP_AUTO_PROPAGATION_LABEL,
    PP_ID_LABEL,
    PP_KIND,
    PP_NAME_ANNOTATION,
    PP_NAMESPACE_ANNOTATION,
    Obj,
    clone,
    labels_of,
)
from tidal_sim.controllers.quantity import format_list, pod_template_requests

_KARMADA_KEY = ".karmada.io"
_BINDING_SPEC_FIELDS = (
    "resource",
    "replicaRequirements",
    "replicas",
    "propagateDeps",
    "schedulerName",
    "placement",
    "failover",
    "conflictResolution",
    "preserveResourcesOnDeletion",
    "suspension",
)


def policy_id(policy: Obj) -> str:
    label = PP_ID_LABEL if policy.get("kind") == PP_KIND else CPP_ID_LABEL
    return labels_of(policy).get(label) or policy["metadata"].get("uid", "")


def specification_changed(old: Obj, new: Obj) -> bool:
    """eventfilter.SpecificationChanged: anything but status, managedFields, resourceVersion."""
    return _strip(old, karmada=False) != _strip(new, karmada=False)


def change_by_karmada(old: Obj, new: Obj) -> bool:
    """eventfilter.ResourceChangeByKarmada: equal once Karmada-owned keys and generation go."""
    return _strip(old, karmada=True) == _strip(new, karmada=True)


def _strip_karmada_keys(meta: Obj) -> None:
    """Drop the generation and Karmada's own labels and annotations (the namespace's
    skip-auto-propagation label stays: a user sets it)."""
    meta.pop("generation", None)
    labels = {
        k: v
        for k, v in (meta.get("labels") or {}).items()
        if _KARMADA_KEY not in k or k == NAMESPACE_SKIP_AUTO_PROPAGATION_LABEL
    }
    annotations = {
        k: v for k, v in (meta.get("annotations") or {}).items() if _KARMADA_KEY not in k
    }
    meta.pop("labels", None)
    meta.pop("annotations", None)
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations


def _strip(obj: Obj, *, karmada: bool) -> Obj:
    out = {k: v for k, v in obj.items() if k not in ("status", "metadata")}
    meta = {
        k: v
        for k, v in (obj.get("metadata") or {}).items()
        if k not in ("managedFields", "resourceVersion")
    }
    if karmada:
        _strip_karmada_keys(meta)
    out["metadata"] = meta
    return out


def add_claim(obj: Obj, policy: Obj, pid: str) -> None:
    meta = obj.setdefault("metadata", {})
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    if policy["kind"] == PP_KIND:
        labels.pop(CPP_ID_LABEL, None)  # excludeClusterPolicy
        annotations.pop(CPP_NAME_ANNOTATION, None)
        labels[PP_ID_LABEL] = pid
        annotations[PP_NAMESPACE_ANNOTATION] = policy["metadata"].get("namespace", "")
        annotations[PP_NAME_ANNOTATION] = policy["metadata"]["name"]
    else:
        labels[CPP_ID_LABEL] = pid
        annotations[CPP_NAME_ANNOTATION] = policy["metadata"]["name"]
    meta["labels"], meta["annotations"] = labels, annotations


def remove_claim(obj: Obj, kind: str) -> None:
    meta = obj["metadata"]
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    if kind == PP_KIND:
        labels.pop(PP_ID_LABEL, None)
        annotations.pop(PP_NAMESPACE_ANNOTATION, None)
        annotations.pop(PP_NAME_ANNOTATION, None)
    else:
        labels.pop(CPP_ID_LABEL, None)
        annotations.pop(CPP_NAME_ANNOTATION, None)
    for field, value in (("labels", labels), ("annotations", annotations)):
        if value:
            meta[field] = value
        else:
            meta.pop(field, None)


def merge_binding(obj: Obj, desired: Obj, template: Obj, policy: Obj, pid: str) -> None:
    """CreateOrUpdate's mutate function: refresh only what the detector owns (not clusters)."""
    spec = obj.setdefault("spec", {})
    for field in _BINDING_SPEC_FIELDS:
        if field == "suspension":
            continue
        if field in desired:
            spec[field] = clone(desired[field])
        else:
            spec.pop(field, None)
    if "suspension" in desired:
        merged = dict(spec.get("suspension") or {})
        merged.update(desired["suspension"])
        spec["suspension"] = merged
    obj["metadata"]["ownerReferences"] = [owner_reference(template)]
    add_claim(obj, policy, pid)


def binding_current(current: Obj, desired: Obj, template: Obj, policy: Obj, pid: str) -> bool:
    """True when merge_binding would change nothing (saves a write per unchanged binding)."""
    if not _spec_current(current.get("spec") or {}, desired):
        return False
    meta = current["metadata"]
    if meta.get("ownerReferences") != [owner_reference(template)]:
        return False
    return _claimed_by(meta, policy, pid)


def _spec_current(spec: Obj, desired: Obj) -> bool:
    """The binding's spec has the desired fields (suspension: merged in)."""
    for field in _BINDING_SPEC_FIELDS:
        if field == "suspension":
            if "suspension" in desired and {
                **(spec.get("suspension") or {}),
                **desired["suspension"],
            } != spec.get("suspension"):
                return False
            continue
        if spec.get(field) != desired.get(field):
            return False
    return True


def _claimed_by(meta: Obj, policy: Obj, pid: str) -> bool:
    """The binding carries the policy's claim labels and annotations (and no other's)."""
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    if policy["kind"] == PP_KIND:
        return (
            labels.get(PP_ID_LABEL) == pid
            and CPP_ID_LABEL not in labels
            and CPP_NAME_ANNOTATION not in annotations
            and annotations.get(PP_NAMESPACE_ANNOTATION) == policy["metadata"].get("namespace", "")
            and annotations.get(PP_NAME_ANNOTATION) == policy["metadata"]["name"]
        )
    return (
        labels.get(CPP_ID_LABEL) == pid
        and annotations.get(CPP_NAME_ANNOTATION) == policy["metadata"]["name"]
    )


def owner_reference(template: Obj) -> Obj:
    meta = template["metadata"]
    return {
        "apiVersion": template["apiVersion"],
        "kind": template["kind"],
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def interpret_replicas(template: Obj) -> tuple[int, dict[str, str] | None]:
    """Karmada's default replica interpreter for Deployment/StatefulSet (ReplicaSet, Job alike):
    spec.replicas (absent = the apiserver's default, 1) and the pod template's summed requests."""
    if template.get("kind") not in ("Deployment", "StatefulSet", "ReplicaSet", "Job"):
        return 0, None
    spec = template.get("spec") or {}
    if template["kind"] == "Job":
        replicas = int(spec.get("parallelism") or 0)
        completions = spec.get("completions")
        if completions is not None:
            replicas = min(replicas, int(completions))
    else:
        replicas = int(spec["replicas"]) if spec.get("replicas") is not None else 1
    requests = pod_template_requests(spec.get("template") or {})
    return replicas, format_list(requests)
