"""Typed read-only views over the Karmada objects the engine reasons about.

A view wraps the raw object (`Obj`) and answers questions about it; it never copies the
object or writes to it. The engine and the daemon ask views, so the shape of a payload is
known in this one module (missing fields read as empty, as the API omits them).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tidal.domain.placement import Placement
from tidal.karmada.names import (
    ACTIVATION_BEFORE_LAZY,
    LABEL_MANAGED_BY,
    LABEL_RUN,
    LABEL_SCHEDULE,
    LABEL_WAVE,
    LAZY_ADDED_BY,
    MANAGER,
    POLICY_RUN,
    POLICY_WINDOW,
    claim_labels,
)
from tidal.karmada.objects import Obj

LAZY = "Lazy"
COMPLETED_RUN = "tidal.io/completed-run"
EMPTY: Mapping[str, Any] = {}


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 server timestamp, or None when absent or unreadable."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else EMPTY


def _list(value: object) -> Sequence[Any]:
    return value if isinstance(value, list) else ()


def _walk(obj: object, path: Sequence[str]) -> object:
    for part in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(part)
    return obj


@dataclass(frozen=True)
class ObjectView:
    """metadata of any object."""

    raw: Mapping[str, Any]

    @property
    def metadata(self) -> Mapping[str, Any]:
        return _map(self.raw.get("metadata"))

    @property
    def name(self) -> str:
        return str(self.metadata.get("name") or "")

    @property
    def labels(self) -> Mapping[str, str]:
        return _map(self.metadata.get("labels"))

    @property
    def annotations(self) -> dict[str, str]:
        return dict(_map(self.metadata.get("annotations")))

    @property
    def resource_version(self) -> str:
        return str(self.metadata.get("resourceVersion") or "")

    @property
    def generation(self) -> int | None:
        value = self.metadata.get("generation")
        return int(value) if isinstance(value, int) else None

    @property
    def created(self) -> datetime | None:
        return parse_time(self.metadata.get("creationTimestamp"))

    @property
    def spec(self) -> Mapping[str, Any]:
        return _map(self.raw.get("spec"))

    @property
    def status(self) -> Mapping[str, Any]:
        return _map(self.raw.get("status"))


@dataclass(frozen=True)
class ScheduledCondition:
    status: str  # True | False | Unknown
    reason: str
    message: str


class BindingView(ObjectView):
    """A ResourceBinding / ClusterResourceBinding."""

    @classmethod
    def of(cls, binding: Mapping[str, Any] | None) -> BindingView:
        return cls(binding if binding is not None else EMPTY)

    @property
    def placement(self) -> Placement | None:
        """The placement the binding carries (None: none)."""
        return Placement.of(self.placement_as_read)

    @property
    def placement_as_read(self) -> Mapping[str, Any] | None:
        """The raw placement: cheaper than a Placement to key a cache by (equal raw forms
        give equal placements)."""
        value = self.spec.get("placement")
        return value if isinstance(value, Mapping) else None

    @property
    def replicas(self) -> int | None:
        value = self.spec.get("replicas")
        return int(value) if isinstance(value, int) else None

    @property
    def has_replicas_field(self) -> bool:
        return "replicas" in self.spec

    def assignment(self) -> dict[str, int]:
        """Replicas per member cluster the scheduler assigned (spec.clusters)."""
        return {
            str(c["name"]): int(c.get("replicas") or 0)
            for c in _list(self.spec.get("clusters"))
            if c.get("name")
        }

    def ready(self, ready_field: str | None = None) -> dict[str, int]:
        """Ready replicas per member cluster from aggregatedStatus (`ready_field` names
        another status field of the member workload)."""
        path = (ready_field or "status.readyReplicas").split(".")
        if path and path[0] == "status":
            path = path[1:]
        out: dict[str, int] = {}
        for item in _list(self.status.get("aggregatedStatus")):
            value = _walk(_map(item.get("status")), path)
            out[str(item.get("clusterName"))] = int(value) if isinstance(value, int | float) else 0
        return out

    def member_replicas(self) -> dict[str, int | None]:
        """Per member cluster that reports the workload (aggregatedStatus): its status.replicas,
        the pods the member runs for it (None when the kind reports no such field)."""
        out: dict[str, int | None] = {}
        for item in _list(self.status.get("aggregatedStatus")):
            value = _map(item.get("status")).get("replicas")
            out[str(item.get("clusterName"))] = (
                int(value) if isinstance(value, int | float) else None
            )
        return out

    def healthy_clusters(self) -> set[str]:
        return {
            str(i.get("clusterName"))
            for i in _list(self.status.get("aggregatedStatus"))
            if i.get("health") == "Healthy"
        }

    @property
    def scheduled(self) -> ScheduledCondition | None:
        for cond in _list(self.status.get("conditions")):
            if cond.get("type") == "Scheduled":
                return ScheduledCondition(
                    str(cond.get("status")), str(cond.get("reason")), str(cond.get("message", ""))
                )
        return None

    @property
    def scheduler_observed_generation(self) -> int | None:
        value = self.status.get("schedulerObservedGeneration")
        return int(value) if isinstance(value, int) else None

    @property
    def reschedule_triggered_at(self) -> datetime | None:
        return parse_time(self.spec.get("rescheduleTriggeredAt"))

    @property
    def last_scheduled(self) -> datetime | None:
        return parse_time(self.status.get("lastScheduledTime"))

    @property
    def claimed(self) -> bool:
        """A propagation policy claims it (Karmada's scheduler ignores unclaimed bindings)."""
        return any(self.labels.get(key) for key in claim_labels())

    def replica_requests(self) -> Mapping[str, object]:
        return _map(_map(self.spec.get("replicaRequirements")).get("resourceRequest"))


class PolicyView(ObjectView):
    """A (Cluster)PropagationPolicy, with tidal's marks."""

    @classmethod
    def of(cls, policy: Mapping[str, Any] | None) -> PolicyView:
        return cls(policy if policy is not None else EMPTY)

    def spec_without_activation(self) -> dict[str, Any]:
        """The spec less activationPreference (which tidal manages around a change)."""
        return comparable(self.raw.get("spec"))

    @property
    def placement(self) -> Placement | None:
        """The policy's placement (None: it has none)."""
        value = self.spec.get("placement")
        return Placement(value) if isinstance(value, Mapping) else None

    @property
    def activation(self) -> str | None:
        value = self.spec.get("activationPreference")
        return str(value) if value is not None else None

    @property
    def window(self) -> str | None:
        return self.annotations.get(POLICY_WINDOW)

    @property
    def run(self) -> str | None:
        return self.annotations.get(POLICY_RUN)

    @property
    def completed_run(self) -> str | None:
        return self.annotations.get(COMPLETED_RUN)

    @property
    def lazy_added_by(self) -> str | None:
        return self.annotations.get(LAZY_ADDED_BY)

    def written_by(self, window: str, run_id: str) -> bool:
        return self.window == window and self.run == run_id

    @property
    def last_changed(self) -> datetime | None:
        """When the policy itself (not a subresource) was last changed, by anyone: the newest
        metadata.managedFields time (whole seconds), or None if the server keeps none."""
        times = [
            parse_time(entry.get("time"))
            for entry in self.metadata.get("managedFields") or []
            if isinstance(entry, Mapping) and not entry.get("subresource")
        ]
        return max((t for t in times if t is not None), default=None)

    def temporary_lazy(self) -> tuple[bool, str | None]:
        """(is this policy's Lazy one tidal added?, the activationPreference to put back)."""
        notes = self.annotations
        if LAZY_ADDED_BY not in notes or self.activation != LAZY:
            return False, None
        return True, notes.get(ACTIVATION_BEFORE_LAZY) or None


def comparable(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """A spec without activationPreference (which tidal manages around the change)."""
    out = copy.deepcopy(dict(spec or {}))
    out.pop("activationPreference", None)
    return out


def cluster_ready_reason(cluster: Obj) -> str:
    """The Ready condition's reason (or status) of a Cluster."""
    for cond in _list(ObjectView(cluster).status.get("conditions")):
        if cond.get("type") == "Ready":
            return str(cond.get("reason") or cond.get("status"))
    return "no Ready condition"


class LeaseView(ObjectView):
    """A coordination.k8s.io Lease (leader election and the per-schedule run lock)."""

    @classmethod
    def of(cls, lease: Mapping[str, Any] | None) -> LeaseView:
        return cls(lease if lease is not None else EMPTY)

    @property
    def holder(self) -> str | None:
        return str(self.spec.get("holderIdentity") or "") or None

    @property
    def duration_seconds(self) -> float | None:
        value = self.spec.get("leaseDurationSeconds")
        return float(value) if isinstance(value, int | float) and value else None

    def record(self) -> tuple[object, ...]:
        """What changes at every renewal (holder, renew and acquire times, transitions)."""
        spec = self.spec
        return (
            spec.get("holderIdentity"),
            spec.get("renewTime"),
            spec.get("acquireTime"),
            spec.get("leaseTransitions"),
        )


class ConfigMapView(ObjectView):
    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace", ""))

    @property
    def data(self) -> Mapping[str, str]:
        return _map(self.raw.get("data"))


class ClusterView(ObjectView):
    """A Karmada Cluster: its Ready condition and resource summary."""

    @property
    def ready(self) -> bool:
        return any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in _list(self.status.get("conditions"))
        )

    def summary(self, part: str) -> Mapping[str, Any]:
        """resourceSummary.<part>: allocatable, allocated or allocating."""
        return _map(_map(self.status.get("resourceSummary")).get(part))


class OverrideView(ObjectView):
    """An OverridePolicy / ClusterOverridePolicy, as tidal writes them for surge waves."""

    @classmethod
    def of(cls, policy: Mapping[str, Any] | None) -> OverrideView:
        return cls(policy if policy is not None else EMPTY)

    @property
    def kind(self) -> str:
        return str(self.raw.get("kind") or "")

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace") or "")

    @property
    def schedule(self) -> str | None:
        """The owner's schedule (annotation: the full value; the label may be shortened)."""
        return self.annotations.get(LABEL_SCHEDULE) or self.labels.get(LABEL_SCHEDULE)

    @property
    def run_id(self) -> str | None:
        return self.annotations.get(LABEL_RUN) or self.labels.get(LABEL_RUN)

    @property
    def wave(self) -> int | None:
        value = self.labels.get(LABEL_WAVE)
        return int(value) if value is not None and str(value).isdigit() else None

    @property
    def managed_by_tidal(self) -> bool:
        return self.labels.get(LABEL_MANAGED_BY) == MANAGER

    def templates(self) -> list[tuple[str, str, str, str]]:
        """(apiVersion, kind, namespace, name) of each template selected by name."""
        out = []
        for s in _list(self.spec.get("resourceSelectors")):
            if isinstance(s, Mapping) and s.get("name"):
                out.append(
                    (
                        str(s.get("apiVersion", "")),
                        str(s.get("kind", "")),
                        str(s.get("namespace") or self.namespace),
                        str(s["name"]),
                    )
                )
        return out

    def replicas(self) -> dict[str, int]:
        """Member replicas each named cluster is set to (the last replica `replace` that
        names it, as Karmada applies rules in order: tidal's overrides write only replica
        fields, /spec/replicas or the field a custom kind's customization revises)."""
        out: dict[str, int] = {}
        for rule in _list(self.spec.get("overrideRules")):
            if not isinstance(rule, Mapping):
                continue
            clusters = _list(_map(rule.get("targetCluster")).get("clusterNames"))
            for item in _list(_map(rule.get("overriders")).get("plaintext")):
                if (
                    not isinstance(item, Mapping)
                    or not str(item.get("path", ""))
                    or item.get("operator") not in ("replace", "add")
                ):
                    continue
                value = item.get("value")
                if isinstance(value, int) and not isinstance(value, bool):
                    for cluster in clusters:
                        out[str(cluster)] = value
        return out
