"""Override policies applied to a member's copy of a template (pkg/util/overridemanager).

For one template and one member cluster: every ClusterOverridePolicy first, then, for a
namespaced template, every OverridePolicy of its namespace. Within each kind the policies whose
resourceSelectors match (none = everything) are applied from the weakest match to the strongest
(match-all, label selector, name), ties by policy name, so the most specific policy has the last
word. Of each policy, every rule whose targetCluster matches the cluster (no targetCluster = all
clusters) is applied in order. Only `plaintext` (JSON patch add/remove/replace) changes the
object here; the other overriders are accepted and stored but do nothing in the emulator.
A patch that cannot apply (replace of a missing path) fails the whole member copy: the Work
keeps what it had, as the binding controller retries and leaves the old Work in place.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import jsonpatch

from tidal_sim.controllers.common import COP_KIND, OP_KIND, Obj, clone
from tidal_sim.controllers.matching import MATCH_ALL, MISMATCH, cluster_matches, selectors_priority

APPLIED_OVERRIDES = "policy.karmada.io/applied-overrides"
APPLIED_CLUSTER_OVERRIDES = "policy.karmada.io/applied-cluster-overrides"


class OverrideFailed(Exception):
    """An overrider could not be applied to the member's copy (names the policy)."""


@dataclass(frozen=True)
class Applied:
    policy: str
    overriders: Obj


def selects(policy: Obj, template: Obj) -> int:
    """How well the policy selects the template (0: not at all; no selectors: match-all)."""
    spec = policy.get("spec") or {}
    meta = template.get("metadata") or {}
    if policy.get("kind") == OP_KIND and (policy.get("metadata") or {}).get(
        "namespace"
    ) != meta.get("namespace"):
        return MISMATCH
    selectors = spec.get("resourceSelectors") or []
    if not selectors:
        return MATCH_ALL
    return selectors_priority(template, selectors)


def _ordered(policies: Iterable[Obj], template: Obj) -> list[Obj]:
    ranked = [(selects(p, template), p["metadata"]["name"], p) for p in policies]
    return [p for rank, _name, p in sorted(ranked, key=lambda r: r[:2]) if rank > MISMATCH]


def _rules(policy: Obj, cluster: Obj) -> list[Obj]:
    spec = policy.get("spec") or {}
    rules = spec.get("overrideRules")
    if not rules:  # the deprecated single targetCluster + overriders form
        rules = [
            {"targetCluster": spec.get("targetCluster"), "overriders": spec.get("overriders") or {}}
        ]
    return [
        rule.get("overriders") or {}
        for rule in rules
        if rule.get("targetCluster") is None or cluster_matches(cluster, rule["targetCluster"])
    ]


def _apply_overriders(manifest: Obj, overriders: Obj) -> Obj:
    plaintext = overriders.get("plaintext") or []
    if not plaintext:
        return manifest
    operations: list[dict[str, Any]] = []
    for item in plaintext:
        operation = {"op": item.get("operator"), "path": item.get("path")}
        if "value" in item:
            operation["value"] = item["value"]
        operations.append(operation)
    patched: Obj = jsonpatch.apply_patch(manifest, operations, in_place=False)
    return patched


def apply_overrides(
    manifest: Obj, cluster: Obj, cluster_policies: Iterable[Obj], policies: Iterable[Obj]
) -> tuple[Obj, list[Applied], list[Applied]]:
    """The overridden copy and what was applied (cluster-scoped, namespaced); raises
    OverrideFailed naming the policy whose patch does not apply."""
    result = clone(manifest)
    applied: dict[str, list[Applied]] = {COP_KIND: [], OP_KIND: []}
    groups = [(COP_KIND, _ordered(cluster_policies, manifest))]
    if (manifest.get("metadata") or {}).get("namespace"):
        groups.append((OP_KIND, _ordered(policies, manifest)))
    for kind, ordered in groups:
        for policy in ordered:
            for overriders in _rules(policy, cluster):
                try:
                    result = _apply_overriders(result, overriders)
                except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                    meta = policy["metadata"]
                    name = "/".join(p for p in (meta.get("namespace"), meta["name"]) if p)
                    raise OverrideFailed(
                        f"{kind} {name} for cluster {cluster['metadata']['name']}: {exc}"
                    ) from exc
                applied[kind].append(Applied(policy["metadata"]["name"], overriders))
    return result, applied[COP_KIND], applied[OP_KIND]


def applied_annotation(items: list[Applied]) -> str | None:
    """The Work annotation value: [{policyName, overriders}] by policy name, or None if empty."""
    if not items:
        return None
    ordered = sorted(items, key=lambda a: a.policy)
    return json.dumps(
        [{"policyName": a.policy, "overriders": a.overriders} for a in ordered],
        separators=(",", ":"),
    )
