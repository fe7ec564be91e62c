"""The resource types the emulator serves, with what discovery and the REST layer need."""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class ResourceType:
    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    namespaced: bool
    has_status: bool = False
    short_names: tuple[str, ...] = ()
    custom: bool = False  # CRD-backed: no strategic-merge patch

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        return self.group_version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"


BUILTIN_TYPES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "Namespace", "namespaces", False, True, ("ns",)),
    ResourceType("", "v1", "ConfigMap", "configmaps", True, False, ("cm",)),
    ResourceType("", "v1", "Secret", "secrets", True),
    ResourceType("", "v1", "Event", "events", True, False, ("ev",)),
    ResourceType("apps", "v1", "Deployment", "deployments", True, True, ("deploy",)),
    ResourceType("apps", "v1", "StatefulSet", "statefulsets", True, True, ("sts",)),
    ResourceType("coordination.k8s.io", "v1", "Lease", "leases", True),
    ResourceType(
        "policy.karmada.io",
        "v1alpha1",
        "PropagationPolicy",
        "propagationpolicies",
        True,
        False,
        ("pp",),
        custom=True,
    ),
    ResourceType(
        "policy.karmada.io",
        "v1alpha1",
        "ClusterPropagationPolicy",
        "clusterpropagationpolicies",
        False,
        False,
        ("cpp",),
        custom=True,
    ),
    ResourceType(
        "policy.karmada.io",
        "v1alpha1",
        "OverridePolicy",
        "overridepolicies",
        True,
        False,
        ("op",),
        custom=True,
    ),
    ResourceType(
        "policy.karmada.io",
        "v1alpha1",
        "ClusterOverridePolicy",
        "clusteroverridepolicies",
        False,
        False,
        ("cop",),
        custom=True,
    ),
    # Written by the emulated binding controller (one per binding and member cluster).
    ResourceType(
        "work.karmada.io",
        "v1alpha1",
        "Work",
        "works",
        True,
        True,
        ("wk",),
        custom=True,
    ),
    ResourceType(
        "work.karmada.io",
        "v1alpha2",
        "ResourceBinding",
        "resourcebindings",
        True,
        True,
        ("rb",),
        custom=True,
    ),
    ResourceType(
        "work.karmada.io",
        "v1alpha2",
        "ClusterResourceBinding",
        "clusterresourcebindings",
        False,
        True,
        ("crb",),
        custom=True,
    ),
    ResourceType(
        "apps.karmada.io",
        "v1alpha1",
        "WorkloadRebalancer",
        "workloadrebalancers",
        False,
        True,
        (),
        custom=True,
    ),
    # Lua scripts interpreting a kind (controllers/customizations.py).
    ResourceType(
        "config.karmada.io",
        "v1alpha1",
        "ResourceInterpreterCustomization",
        "resourceinterpretercustomizations",
        False,
        False,
        ("ric",),
        custom=True,
    ),
    # Served by karmada-aggregated-apiserver upstream, not a CRD; strategic merge is refused
    # there as well, so it is treated like a custom kind.
    ResourceType(
        "cluster.karmada.io",
        "v1alpha1",
        "Cluster",
        "clusters",
        False,
        True,
        (),
        custom=True,
    ),
)


class KindRegistry:
    """Lookup of served types by (group, version, plural) and by (apiVersion, kind)."""

    def __init__(self, types: tuple[ResourceType, ...] = BUILTIN_TYPES) -> None:
        self._lock = threading.Lock()
        self._by_plural: dict[tuple[str, str, str], ResourceType] = {}
        self._by_kind: dict[tuple[str, str], ResourceType] = {}
        for rtype in types:
            self.register(rtype)

    def register(self, rtype: ResourceType) -> None:
        with self._lock:
            self._by_plural[(rtype.group, rtype.version, rtype.plural)] = rtype
            self._by_kind[(rtype.api_version, rtype.kind)] = rtype

    def by_plural(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_plural.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        return self._by_kind.get((api_version, kind))

    def all(self) -> list[ResourceType]:
        with self._lock:
            return list(self._by_plural.values())
