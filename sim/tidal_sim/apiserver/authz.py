"""Kubernetes RBAC for the emulator's callers, when it is switched on.

The caller is the identity its bearer token names (`sim:<user>`); a ServiceAccount is the user
`system:serviceaccount:<namespace>:<name>`. `admin` (the emulator's default kubeconfig user) is
a superuser, like a member of system:masters. Everyone else is allowed exactly what the
Roles, ClusterRoles, RoleBindings and ClusterRoleBindings stored in the emulator grant:
apiGroups, resources (`plural/subresource` for a subresource), verbs and resourceNames, with
`*` where Kubernetes allows it. A request without a name (create, list, watch) never matches
a rule that lists resourceNames. Written from the Kubernetes RBAC documentation; it shares no
code with tidal's own RBAC generator, which it is meant to check.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tidal_sim.apiserver.errors import ApiError
from tidal_sim.apiserver.routing import Route
from tidal_sim.kinds import KindRegistry, ResourceType
from tidal_sim.store import Store

Obj = dict[str, Any]
RBAC_GROUP = "rbac.authorization.k8s.io"
SUPERUSERS = frozenset({"admin"})

RBAC_TYPES: tuple[ResourceType, ...] = (
    ResourceType(RBAC_GROUP, "v1", "Role", "roles", True),
    ResourceType(RBAC_GROUP, "v1", "ClusterRole", "clusterroles", False),
    ResourceType(RBAC_GROUP, "v1", "RoleBinding", "rolebindings", True),
    ResourceType(RBAC_GROUP, "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    ResourceType("", "v1", "ServiceAccount", "serviceaccounts", True, False, ("sa",)),
)


def _subject_names(subject: Obj, binding_namespace: str | None) -> set[str]:
    kind, name = subject.get("kind"), str(subject.get("name", ""))
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace or ""
        return {f"system:serviceaccount:{namespace}:{name}"}
    if kind == "User":
        return {name}
    if kind == "Group" and name == "system:authenticated":
        return {"*"}
    return set()


def _rule_allows(rule: Obj, verb: str, group: str, resource: str, name: str | None) -> bool:
    groups = rule.get("apiGroups") or []
    resources = rule.get("resources") or []
    verbs = rule.get("verbs") or []
    names = rule.get("resourceNames") or []
    if "*" not in groups and group not in groups:
        return False
    if "*" not in resources and resource not in resources:
        return False
    if "*" not in verbs and verb not in verbs:
        return False
    return not names or (name is not None and name in names)


class Authorizer:
    """Decides each request from the RBAC objects in the store (off until `enabled`)."""

    def __init__(self, store: Store, kinds: KindRegistry, *, enabled: bool = False) -> None:
        self.store = store
        self.kinds = kinds
        self.enabled = enabled
        for rtype in RBAC_TYPES:
            if kinds.by_kind(rtype.api_version, rtype.kind) is None:
                kinds.register(rtype)

    def _objects(self, kind: str, namespace: str | None = None) -> list[Obj]:
        rtype = self.kinds.by_kind(f"{RBAC_GROUP}/v1", kind)
        if rtype is None:
            return []
        return self.store.list(rtype, namespace)[0]

    def _role_rules(self, ref: Obj, namespace: str | None) -> list[Obj]:
        kind, name = ref.get("kind"), ref.get("name")
        for role in self._objects(str(kind), namespace if kind == "Role" else None):
            if role["metadata"]["name"] == name:
                return list(role.get("rules") or [])
        return []

    def _bound(self, user: str, bindings: Iterable[Obj], namespace: str | None) -> list[Obj]:
        rules: list[Obj] = []
        for binding in bindings:
            names: set[str] = set()
            for subject in binding.get("subjects") or []:
                names |= _subject_names(subject, namespace)
            if user in names or "*" in names:
                rules += self._role_rules(binding.get("roleRef") or {}, namespace)
        return rules

    def check(self, user: str, verb: str, route: Route) -> None:
        """Raise a 403 Forbidden Status unless the user may make this request."""
        if not self.enabled or user in SUPERUSERS:
            return
        resource = route.resource
        rules = self._bound(user, self._objects("ClusterRoleBinding"), None)
        if route.namespace is not None:
            rules += self._bound(
                user, self._objects("RoleBinding", route.namespace), route.namespace
            )
        if any(_rule_allows(r, verb, route.rtype.group, resource, route.name) for r in rules):
            return
        who = user or "system:anonymous"
        where = (
            f' in the namespace "{route.namespace}"' if route.namespace else " at the cluster scope"
        )
        group = f'in API group "{route.rtype.group}"'
        target = f'{resource} "{route.name}"' if route.name else resource
        raise ApiError(
            403,
            f'{target} is forbidden: User "{who}" cannot {verb} resource '
            f'"{resource}" {group}{where}',
            reason="Forbidden",
        )
