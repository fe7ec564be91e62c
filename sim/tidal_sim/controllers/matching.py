"""Selector matching used by the controllers: label selectors, resource selectors, cluster
affinity and taint toleration (pkg/util/selector.go, the scheduler's filter plugins)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tidal_sim.labels import object_matches

Obj = dict[str, Any]

# Implicit priorities of a resource selector match (pkg/util/selector.go).
MISMATCH, MATCH_ALL, MATCH_LABEL_SELECTOR, MATCH_NAME = 0, 1, 2, 3


def label_selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics: matchLabels AND every matchExpression; an absent or empty
    selector matches all, an invalid one nothing."""
    return selector is None or object_matches(selector, labels)


def resource_selector_priority(template: Obj, selector: Mapping[str, Any]) -> int:
    """How well one resourceSelector matches a template (0 = no match)."""
    meta = template.get("metadata", {})
    if (template.get("apiVersion"), template.get("kind")) != (
        selector.get("apiVersion"),
        selector.get("kind"),
    ):
        return MISMATCH
    namespace = selector.get("namespace")
    if namespace and meta.get("namespace", "") != namespace:
        return MISMATCH
    name = selector.get("name")
    if name:
        return MATCH_NAME if name == meta.get("name") else MISMATCH
    label_selector = selector.get("labelSelector")
    if label_selector is None:
        return MATCH_ALL
    if label_selector_matches(label_selector, meta.get("labels") or {}):
        return MATCH_LABEL_SELECTOR
    return MISMATCH


def selectors_priority(template: Obj, selectors: Sequence[Mapping[str, Any]]) -> int:
    return max((resource_selector_priority(template, rs) for rs in selectors), default=MISMATCH)


def cluster_matches(cluster: Obj, affinity: Mapping[str, Any] | None) -> bool:
    """ClusterAffinity: excludeClusters, labelSelector, fieldSelector (provider/region/zone),
    clusterNames (empty = any)."""
    if not affinity:
        return True
    meta, spec = cluster.get("metadata", {}), cluster.get("spec") or {}
    name = meta.get("name")
    if name in (affinity.get("exclude") or []):
        return False
    label_selector = affinity.get("labelSelector")
    labels = meta.get("labels") or {}
    if label_selector is not None and not label_selector_matches(label_selector, labels):
        return False
    if not _fields_match(affinity.get("fieldSelector"), spec):
        return False
    names = affinity.get("clusterNames") or []
    return not names or name in names


def _fields_match(field_selector: Mapping[str, Any] | None, spec: Mapping[str, Any]) -> bool:
    """Every expression of the affinity's fieldSelector holds for the cluster's provider,
    region and zones (none given: true)."""
    if not field_selector:
        return True
    fields = {"provider": spec.get("provider"), "region": spec.get("region")}
    zones = list(spec.get("zones") or ([spec["zone"]] if spec.get("zone") else []))
    return all(
        _field_matches(expr, fields, zones) for expr in field_selector.get("matchExpressions") or []
    )


def _field_matches(expr: Mapping[str, Any], fields: Mapping[str, Any], zones: list[str]) -> bool:
    key, operator, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if key == "zone":
        if operator == "In":
            return any(z in values for z in zones)
        if operator == "NotIn":
            return not any(z in values for z in zones)
        if operator == "Exists":
            return bool(zones)
        if operator == "DoesNotExist":
            return not zones
        return False
    value = fields.get(str(key))
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    return False


def tolerates(taint: Mapping[str, Any], toleration: Mapping[str, Any]) -> bool:
    """corev1 Toleration.ToleratesTaint (without the Lt/Gt operators)."""
    effect = toleration.get("effect")
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key")
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def untolerated_taint(
    taints: Sequence[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    """The first NoSchedule/NoExecute taint no toleration tolerates, or None."""
    for taint in taints:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(taint, tol) for tol in tolerations):
            return taint
    return None
