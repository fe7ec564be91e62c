"""Least-privilege RBAC for tidal in the Karmada control plane, derived from the schedules.

Pure: schedules in, RBAC objects out. The rules name exactly the policies the schedules manage
(resourceNames), the template kinds they select, and the state namespace; no rule grants `*`.
The verbs are those tidal's access layer (tidal/karmada/) actually sends; the acceptance test
in tests/cli/test_rbac.py checks every request of real switches against them.
Kubernetes cannot restrict `create` (nor `list`/`watch` without a name field selector) by
resourceNames, so those rules carry no names: that is the narrowest RBAC can express.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tidal.domain.schedule import PolicyChange, TidalSchedule
from tidal.karmada.interpreters import RIC_GROUP, RIC_PLURAL, is_custom_group

RBAC_API = "rbac.authorization.k8s.io/v1"
POLICY_GROUP = "policy.karmada.io"
WORK_GROUP = "work.karmada.io"
# Events of cluster-scoped objects (ClusterPropagationPolicies) go to this namespace.
CLUSTER_EVENT_NAMESPACE = "default"

# Plurals of well-known kinds; any other kind gets the regular English plural of its lower case.
_PLURALS = {
    "Endpoints": "endpoints",
    "Ingress": "ingresses",
    "NetworkPolicy": "networkpolicies",
    "PodDisruptionBudget": "poddisruptionbudgets",
    "HorizontalPodAutoscaler": "horizontalpodautoscalers",
}


# Template kinds known to be namespaced: their bindings are never ClusterResourceBindings.
NAMESPACED_KINDS = frozenset(
    {
        ("apps", "deployments"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("apps", "replicasets"),
        ("batch", "jobs"),
        ("batch", "cronjobs"),
        ("", "configmaps"),
        ("", "secrets"),
        ("", "services"),
        ("", "pods"),
        ("", "serviceaccounts"),
        ("", "persistentvolumeclaims"),
        ("networking.k8s.io", "ingresses"),
        ("networking.k8s.io", "networkpolicies"),
        ("autoscaling", "horizontalpodautoscalers"),
        ("policy", "poddisruptionbudgets"),
    }
)


def plural_of(kind: str) -> str:
    """The REST resource name of a kind (Deployment -> deployments, Policy -> policies)."""
    if kind in _PLURALS:
        return _PLURALS[kind]
    lower = kind.lower()
    if re.search(r"[^aeiou]y$", lower):
        return lower[:-1] + "ies"
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    return lower + "s"


def group_of(api_version: str) -> str:
    """The API group of an apiVersion ("apps/v1" -> "apps", "v1" -> "")."""
    return api_version.rpartition("/")[0]


@dataclass(frozen=True)
class Rule:
    """Verbs on one resource, in one namespace (None: cluster-wide), optionally by name."""

    namespace: str | None
    api_group: str
    resource: str
    verbs: tuple[str, ...]
    resource_names: tuple[str, ...] = ()

    def to_manifest(self) -> dict[str, Any]:
        rule: dict[str, Any] = {"apiGroups": [self.api_group], "resources": [self.resource]}
        if self.resource_names:
            rule["resourceNames"] = list(self.resource_names)
        rule["verbs"] = list(self.verbs)
        return rule


@dataclass(frozen=True)
class Request:
    """One API request as RBAC sees it."""

    verb: str
    api_group: str
    resource: str
    namespace: str | None = None
    name: str | None = None


def allows(rules: Iterable[Rule], request: Request) -> bool:
    """True when some rule authorizes the request (Kubernetes RBAC semantics, no wildcards).

    A cluster-wide rule (ClusterRole bound by a ClusterRoleBinding) covers every namespace;
    a namespaced rule (Role) covers only its own namespace. resourceNames, when given, must
    contain the request's name; a request without a name (create, list) never matches them.
    """
    for rule in rules:
        if rule.namespace is not None and rule.namespace != request.namespace:
            continue
        if rule.api_group != request.api_group or rule.resource != request.resource:
            continue
        if request.verb not in rule.verbs:
            continue
        if rule.resource_names and request.name not in rule.resource_names:
            continue
        return True
    return False


@dataclass(frozen=True)
class Subject:
    """Who the rules are bound to: the identity in tidal's Karmada kubeconfig."""

    kind: str  # ServiceAccount | User | Group
    name: str
    namespace: str | None = None

    def to_manifest(self) -> dict[str, Any]:
        if self.kind == "ServiceAccount":
            return {"kind": "ServiceAccount", "name": self.name, "namespace": self.namespace}
        return {"kind": self.kind, "apiGroup": "rbac.authorization.k8s.io", "name": self.name}


@dataclass
class _Grants:
    """Names granted per (namespace, group, resource, verb); None means any name."""

    names: dict[tuple[str | None, str, str, str], set[str] | None] = field(default_factory=dict)

    def add(
        self,
        namespace: str | None,
        group: str,
        resource: str,
        verbs: Iterable[str],
        names: Iterable[str] = (),
    ) -> None:
        wanted = set(names)
        for verb in verbs:
            key = (namespace, group, resource, verb)
            held = self.names.get(key, set())
            self.names[key] = None if held is None or not wanted else held | wanted

    def rules(self) -> list[Rule]:
        """One rule per (namespace, group, resource, set of names), verbs merged."""
        verbs: dict[tuple[str | None, str, str, tuple[str, ...]], list[str]] = defaultdict(list)
        for (namespace, group, resource, verb), names in self.names.items():
            verbs[(namespace, group, resource, tuple(sorted(names or ())))].append(verb)
        rules = [
            Rule(ns, group, resource, tuple(sorted(v)), names)
            for (ns, group, resource, names), v in verbs.items()
        ]
        return sorted(rules, key=_rule_order)


def _rule_order(rule: Rule) -> tuple[str, str, str, tuple[str, ...]]:
    return (rule.namespace or "", rule.api_group, rule.resource, rule.resource_names)


@dataclass(frozen=True)
class TemplateKind:
    """A kind of resource template the schedules select, and where (None: any namespace)."""

    api_group: str
    resource: str
    namespace: str | None


def _selectors_of(policy: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    spec = (policy or {}).get("spec")
    selectors = spec.get("resourceSelectors") if isinstance(spec, Mapping) else None
    return [s for s in selectors or [] if isinstance(s, Mapping) and s.get("kind")]


def template_kinds(schedule: TidalSchedule) -> list[TemplateKind]:
    """Template kinds a schedule's windows touch: its `workloads`, else its policies' selectors.

    Selectors are read from swap manifests and from patches that set resourceSelectors. A
    patched policy's own selectors live in the cluster, not in the file: such a schedule
    without `workloads` contributes no kind here (see `unknown_template_kinds`).
    """
    kinds: list[TemplateKind] = []
    if schedule.spec.workloads:
        for w in schedule.spec.workloads:
            kinds.append(TemplateKind(group_of(w.api_version), plural_of(w.kind), w.namespace))
        return kinds
    for window in schedule.spec.windows:
        for change in window.policies:
            policy = change.swap.manifest if change.swap is not None else change.patch
            kinds += _selected_kinds(policy, change.policy_namespace)
    return kinds


def policy_template_kinds(policy: Mapping[str, Any]) -> list[TemplateKind]:
    """Template kinds a live policy selects (a PropagationPolicy only in its own namespace)."""
    metadata = policy.get("metadata")
    own_namespace = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    return _selected_kinds(policy, own_namespace)


def _selected_kinds(policy: Mapping[str, Any] | None, namespace: Any) -> list[TemplateKind]:
    """The template kind of each of the policy's resource selectors; a selector without a
    namespace is in `namespace`."""
    out = []
    for selector in _selectors_of(policy):
        where = selector.get("namespace") or namespace
        out.append(
            TemplateKind(
                group_of(str(selector.get("apiVersion", ""))),
                plural_of(str(selector["kind"])),
                str(where) if where else None,
            )
        )
    return out


def patched_policies(schedule: TidalSchedule) -> list[tuple[str, str, str | None]]:
    """(kind, name, namespace) of every policy the schedule patches in place."""
    out: list[tuple[str, str, str | None]] = []
    for window in schedule.spec.windows:
        for change in window.policies:
            ref = (change.kind, change.policy_name, change.policy_namespace)
            if change.patch is not None and ref not in out:
                out.append(ref)
    return out


def unknown_template_kinds(schedule: TidalSchedule) -> bool:
    """True when the files alone do not say which template kinds the schedule touches."""
    return not template_kinds(schedule)


def _policy_resource(change: PolicyChange) -> str:
    return (
        "clusterpropagationpolicies"
        if change.kind == "ClusterPropagationPolicy"
        else "propagationpolicies"
    )


def _uses_rebalancers(schedule: TidalSchedule) -> bool:
    return any(w.trigger != "touch" for w in schedule.spec.windows)


def _grant_policies(grants: _Grants, schedule: TidalSchedule) -> set[str]:
    """The named policies a schedule's windows change; the namespaces of their Events."""
    event_namespaces: set[str] = set()
    for window in schedule.spec.windows:
        for change in window.policies:
            resource = _policy_resource(change)
            names = [ref.name for ref in change.policy_refs()]
            namespace = change.policy_namespace
            event_namespaces.add(namespace or CLUSTER_EVENT_NAMESPACE)
            # read, patch (and patch back to the pre-image on rollback)
            grants.add(namespace, POLICY_GROUP, resource, ("get", "patch"), names)
            if change.swap is not None:
                # swap deletes `from` and creates `to`; rollback does the reverse
                grants.add(namespace, POLICY_GROUP, resource, ("delete",), names)
                grants.add(namespace, POLICY_GROUP, resource, ("create",))
    return event_namespaces


def _grant_reads(grants: _Grants, templates: Sequence[TemplateKind]) -> None:
    """The templates, their bindings, the clusters and the custom kinds' interpreters."""
    for template in templates:
        # list by label selector (paged) to resolve a window; patch to touch a wave; get when
        # a wave's binding vanishes, to tell a deleted template from a lost binding
        grants.add(
            template.namespace, template.api_group, template.resource, ("get", "list", "patch")
        )
    # Bindings are read cluster-wide: the engine lists them in one call when a selection spans
    # many namespaces, and they hold no secrets (placement and status only).
    grants.add(None, WORK_GROUP, "resourcebindings", ("list", "watch"))
    if any(
        t.namespace is None and (t.api_group, t.resource) not in NAMESPACED_KINDS for t in templates
    ):
        # a template kind that may be cluster-scoped gets a ClusterResourceBinding
        grants.add(None, WORK_GROUP, "clusterresourcebindings", ("list", "watch"))
    # listed, and watched by the daemon's shared cache (one watch for all its switches)
    grants.add(None, "cluster.karmada.io", "clusters", ("list", "watch"))
    if any(is_custom_group(t.api_group) for t in templates):
        # a custom kind's replicas come from its ResourceInterpreterCustomization
        # (tidal.engine.custom_kinds): listed at planning, cluster-scoped
        grants.add(None, RIC_GROUP, RIC_PLURAL, ("list",))


def derive_rules(
    schedules: Sequence[TidalSchedule],
    *,
    state_namespace: str,
    lease_name: str = "tidal-leader",
    extra_templates: Sequence[TemplateKind] = (),
    member_capacity: bool = False,
) -> list[Rule]:
    """Every rule tidal needs in the Karmada apiserver to run these schedules (and, with
    `member_capacity`, to watch the members' Nodes and Pods through the cluster proxy)."""
    grants = _Grants()
    templates: list[TemplateKind] = list(extra_templates)
    event_namespaces = {state_namespace}
    rebalancers = False
    for schedule in schedules:
        templates += template_kinds(schedule)
        rebalancers = rebalancers or _uses_rebalancers(schedule)
        event_namespaces |= _grant_policies(grants, schedule)
    _grant_reads(grants, templates)
    _grant_overrides(grants, templates)
    if member_capacity:
        # scheduler.capacity_source members: the proxy is authorized as `get` on the
        # subresource whatever the member request (a list or a watch there)
        grants.add(None, "cluster.karmada.io", "clusters/proxy", ("get",))
    if rebalancers:
        # one per wave (never reused: the trigger time is its creationTimestamp); read back
        # for the per-workload results when a wave fails; deleted when the run ends (the TTL
        # is only the safety net). Names are made per run, so resourceNames cannot narrow it.
        grants.add(
            None,
            "apps.karmada.io",
            "workloadrebalancers",
            ("create", "get", "delete", "deletecollection"),
        )
    # the daemon's own objects: run state, leader Lease, Events
    grants.add(state_namespace, "", "configmaps", ("create", "get", "list", "update"))
    grants.add(state_namespace, "coordination.k8s.io", "leases", ("create",))
    # the leader Lease, and each schedule's run lock (shared by the daemon and `tidal switch`)
    run_locks = tuple(f"tidal-run-{s.metadata.name}" for s in schedules)
    grants.add(
        state_namespace,
        "coordination.k8s.io",
        "leases",
        ("get", "update"),
        (lease_name, *run_locks),
    )
    for namespace in sorted(event_namespaces):
        grants.add(namespace, "", "events", ("create",))
    # the sweep of leftovers (the daemon's and `tidal cleanup`): bridge marks and temporary
    # Lazy are found on any policy, whatever schedule wrote them (one removed since too), and
    # the run lock of any schedule is read to tell an active run (policies hold no secrets;
    # the state namespace holds only tidal's Leases); watched too: a run reads its policies
    # from one list+watch (the checks before every wave), not a GET each time
    for resource in ("propagationpolicies", "clusterpropagationpolicies"):
        grants.add(None, POLICY_GROUP, resource, ("list", "watch"))
    grants.add(state_namespace, "coordination.k8s.io", "leases", ("get",))
    # the daemon checks that its state namespace exists (it never creates namespaces)
    grants.add(None, "", "namespaces", ("get",), (state_namespace,))
    return grants.rules()


def _grant_overrides(grants: _Grants, templates: Sequence[TemplateKind]) -> None:
    """Surge waves (tidal/karmada/overrides.py): an OverridePolicy per wave in each template
    namespace (a ClusterOverridePolicy for cluster-scoped templates), created, read, replaced
    on a resume and deleted on release; tidal's own are found after a crash by their owner
    labels in one cluster-wide list of each kind; a wave's are released with one
    deletecollection by those labels (refused: one delete each). Names are made per run: no
    resourceNames."""
    verbs = ("create", "delete", "deletecollection", "get", "update")
    for namespace in sorted({t.namespace for t in templates}, key=lambda n: n or ""):
        grants.add(namespace, POLICY_GROUP, "overridepolicies", verbs)
    if any(
        t.namespace is None and (t.api_group, t.resource) not in NAMESPACED_KINDS for t in templates
    ):
        grants.add(None, POLICY_GROUP, "clusteroverridepolicies", verbs)
    for resource in ("overridepolicies", "clusteroverridepolicies"):
        grants.add(None, POLICY_GROUP, resource, ("list",))


def _labels() -> dict[str, str]:
    return {"app.kubernetes.io/name": "tidal", "app.kubernetes.io/managed-by": "tidal-rbac"}


def rbac_manifests(rules: Sequence[Rule], *, name: str, subject: Subject) -> list[dict[str, Any]]:
    """A ClusterRole + ClusterRoleBinding for the cluster-wide rules and a Role + RoleBinding
    per namespace for the namespaced ones (plus the ServiceAccount when that is the subject)."""
    out: list[dict[str, Any]] = []
    if subject.kind == "ServiceAccount":
        out.append(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {
                    "name": subject.name,
                    "namespace": subject.namespace,
                    "labels": _labels(),
                },
            }
        )
    cluster_rules = [r for r in rules if r.namespace is None]
    by_namespace: dict[str, list[Rule]] = defaultdict(list)
    for rule in rules:
        if rule.namespace is not None:
            by_namespace[rule.namespace].append(rule)
    role_ref = {"apiGroup": "rbac.authorization.k8s.io", "name": name}
    if cluster_rules:
        out.append(
            {
                "apiVersion": RBAC_API,
                "kind": "ClusterRole",
                "metadata": {"name": name, "labels": _labels()},
                "rules": [r.to_manifest() for r in cluster_rules],
            }
        )
        out.append(
            {
                "apiVersion": RBAC_API,
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name, "labels": _labels()},
                "roleRef": {**role_ref, "kind": "ClusterRole"},
                "subjects": [subject.to_manifest()],
            }
        )
    for namespace in sorted(by_namespace):
        metadata = {"name": name, "namespace": namespace, "labels": _labels()}
        out.append(
            {
                "apiVersion": RBAC_API,
                "kind": "Role",
                "metadata": metadata,
                "rules": [r.to_manifest() for r in by_namespace[namespace]],
            }
        )
        out.append(
            {
                "apiVersion": RBAC_API,
                "kind": "RoleBinding",
                "metadata": dict(metadata),
                "roleRef": {**role_ref, "kind": "Role"},
                "subjects": [subject.to_manifest()],
            }
        )
    return out


def rules_from_manifests(manifests: Iterable[Mapping[str, Any]]) -> list[Rule]:
    """The rules of printed RBAC objects, read back (Roles keep their namespace)."""
    rules: list[Rule] = []
    for obj in manifests:
        if obj.get("kind") not in ("ClusterRole", "Role"):
            continue
        namespace = obj["metadata"].get("namespace") if obj["kind"] == "Role" else None
        for rule in obj.get("rules", []):
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    rules.append(
                        Rule(
                            namespace,
                            group,
                            resource,
                            tuple(rule["verbs"]),
                            tuple(rule.get("resourceNames", ())),
                        )
                    )
    return rules
