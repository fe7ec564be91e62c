"""Reads of member clusters through Karmada's cluster proxy, as the team estimator needs them.

`/apis/cluster.karmada.io/v1alpha1/clusters/<name>/proxy/<member path>` (the aggregated
cluster API of karmada-aggregated-apiserver, pkg/registry/cluster/storage/proxy.go) forwards a
request to the member with the credentials of the Cluster object, so the one karmada
kubeconfig tidal has reaches every member (it needs `clusters/proxy` there: see the chart's
RBAC). What is read is turned into the pure views of tidal.domain.team_capacity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tidal.domain.prediction import parse_quantity
from tidal.domain.team_capacity import NodeView, QuotaView, Taint
from tidal.karmada.client import KarmadaClient, Obj, Resource
from tidal.karmada.paging import list_paged

PROXY = "/apis/cluster.karmada.io/v1alpha1/clusters/{cluster}/proxy"
_FINISHED = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Proxied(Resource):
    """A member's resource reached through the cluster proxy."""

    cluster: str = ""

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        return PROXY.format(cluster=self.cluster) + super().path(namespace, name, subresource)


def proxied(cluster: str, plural: str, kind: str, namespaced: bool) -> Proxied:
    return Proxied("", "v1", plural, kind, namespaced, cluster)


@dataclass(frozen=True)
class MemberView:
    """What one read of a member found: its nodes (with the requests of their pods) when a
    pool is read there, and the ResourceQuotas of the namespaces read, by namespace."""

    nodes: tuple[NodeView, ...] | None = None
    quotas: Mapping[str, tuple[QuotaView, ...]] = field(default_factory=dict)
    requests: int = 0  # requests sent to the member for this view


def resources_of(raw: Mapping[str, Any] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, qty in (raw or {}).items():
        try:
            out[str(name)] = parse_quantity(qty)
        except ValueError:
            continue  # a quantity we cannot read limits nothing we claim to know
    return out


def pod_requests(pod: Mapping[str, Any]) -> dict[str, float]:
    """A pod's effective requests, as kube-scheduler counts them: the containers' sum, or the
    largest init container's when larger, plus the pod overhead."""
    spec = pod.get("spec") or {}
    total: dict[str, float] = {}
    for container in spec.get("containers") or []:
        for name, qty in resources_of((container.get("resources") or {}).get("requests")).items():
            total[name] = total.get(name, 0.0) + qty
    for container in spec.get("initContainers") or []:
        for name, qty in resources_of((container.get("resources") or {}).get("requests")).items():
            total[name] = max(total.get(name, 0.0), qty)
    for name, qty in resources_of(spec.get("overhead")).items():
        total[name] = total.get(name, 0.0) + qty
    return total


def node_views(nodes: Iterable[Obj], pods: Iterable[Obj]) -> tuple[NodeView, ...]:
    """Nodes with the requests and count of the unfinished pods bound to them."""
    requested: dict[str, dict[str, float]] = {}
    counts: dict[str, int] = {}
    for pod in pods:
        where = (pod.get("spec") or {}).get("nodeName")
        if not where or (pod.get("status") or {}).get("phase") in _FINISHED:
            continue
        counts[where] = counts.get(where, 0) + 1
        bucket = requested.setdefault(where, {})
        for name, qty in pod_requests(pod).items():
            bucket[name] = bucket.get(name, 0.0) + qty
    return tuple(_node_view(node, requested, counts) for node in nodes)


def _node_view(
    node: Obj, requested: dict[str, dict[str, float]], counts: dict[str, int]
) -> NodeView:
    meta, spec, status = (node.get(k) or {} for k in ("metadata", "spec", "status"))
    name = str(meta.get("name"))
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    taints = tuple(
        Taint(str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
        for t in spec.get("taints") or []
    )
    return NodeView(
        name,
        dict(meta.get("labels") or {}),
        resources_of(status.get("allocatable")),
        requested.get(name, {}),
        counts.get(name, 0),
        ready and not spec.get("unschedulable"),
        taints,
    )


def quota_view(obj: Obj) -> QuotaView:
    """A ResourceQuota as its status says (hard in force, used); one the quota controller has
    not counted yet (no status.used) is taken as full, never as empty."""
    status = obj.get("status") or {}
    hard = resources_of(status.get("hard") or (obj.get("spec") or {}).get("hard"))
    used = resources_of(status.get("used")) if "used" in status else dict(hard)
    return QuotaView(str((obj.get("metadata") or {}).get("name")), hard, used)


def read_member(
    client: KarmadaClient, cluster: str, *, nodes: bool, namespaces: Iterable[str]
) -> MemberView:
    """One read of `cluster` through the proxy: its nodes and pods (when `nodes`), and the
    ResourceQuotas of `namespaces`. Raises KarmadaError when the member cannot be read."""
    sent = 0
    views: tuple[NodeView, ...] | None = None
    if nodes:
        node_objs, _ = list_paged(client, proxied(cluster, "nodes", "Node", False))
        pod_objs, _ = list_paged(
            client,
            proxied(cluster, "pods", "Pod", True),
            field_selector="status.phase!=Succeeded,status.phase!=Failed",
        )
        views, sent = node_views(node_objs, pod_objs), sent + 2
    quotas: dict[str, tuple[QuotaView, ...]] = {}
    for namespace in sorted(set(namespaces)):
        objs, _ = list_paged(
            client, proxied(cluster, "resourcequotas", "ResourceQuota", True), namespace
        )
        quotas[namespace] = tuple(quota_view(o) for o in objs)
        sent += 1
    return MemberView(views, quotas, sent)
