"""The simulated members' Nodes and Pods, written to the stores behind the cluster proxy.

On unless EmulatorSettings `memberPods: false` (a test that writes a member's own Nodes and
Pods there turns it off; Emulator.mirror_member_pods() turns it on later): a reader of the
members through the proxy (a capacity source that watches their pods, as
karmada-scheduler-estimator watches them) then sees at once what Karmada's Cluster status
summarises only every clusterStatusUpdateSeconds. A member is written from the first request
that reaches it through the proxy on (its pods then are written at once, except those
terminating at that moment): members nobody reads cost nothing.
Each member gets one Node carrying the Cluster's allocatable, and one Pod per simulated pod
from its creation until its termination has ended (a pod waiting for room has no nodeName; a
terminating one keeps its requests, as kube-scheduler counts it). The pods' `pods` request is
the count Karmada's summary adds per pod and is not written as a container request.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from tidal_sim.controllers.quantity import Resources, format_list
from tidal_sim.kinds import ResourceType
from tidal_sim.store import AlreadyExists, NotFound, Store

NODE = ResourceType("", "v1", "Node", "nodes", False, True, ("no",))
POD = ResourceType("", "v1", "Pod", "pods", True, True, ("po",))
NAMESPACE = ResourceType("", "v1", "Namespace", "namespaces", False, True, ("ns",))


def node_name(cluster: str) -> str:
    return f"{cluster}-node"


class MemberPods:
    """Writes each member's Node and Pods into its proxied store (`store_of(cluster)`)."""

    def __init__(self, store_of: Callable[[str], Store]) -> None:
        self.store_of = store_of
        self._allocatable: dict[str, Resources] = {}
        self._namespaces: set[tuple[str, str]] = set()
        self.clusters: set[str] = set()  # the members written (read through the proxy)

    def node(self, cluster: str, allocatable: Resources) -> None:
        """The member's one Node, with the Cluster's allocatable (written when it changes)."""
        if self._allocatable.get(cluster) == allocatable:
            return
        self._allocatable[cluster] = dict(allocatable)
        store = self.store_of(cluster)
        body = {
            "metadata": {"name": node_name(cluster)},
            "status": {
                "allocatable": format_list(allocatable),
                "capacity": format_list(allocatable),
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        try:
            store.create(NODE, body)
        except AlreadyExists:
            store.mutate(NODE, None, node_name(cluster), lambda n: n.update(status=body["status"]))

    def created(
        self, cluster: str, name: str, namespace: str, request: Resources, *, bound: bool
    ) -> None:
        """A new pod: bound to the member's node when it got room at once, else waiting."""
        store = self.store_of(cluster)
        if (cluster, namespace) not in self._namespaces:
            self._namespaces.add((cluster, namespace))
            with contextlib.suppress(AlreadyExists):
                store.create(NAMESPACE, {"metadata": {"name": namespace}})
        requests = format_list({k: v for k, v in request.items() if k != "pods"})
        body: dict[str, Any] = {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "main", "resources": {"requests": requests}}]},
            "status": {"phase": "Running" if bound else "Pending"},
        }
        if bound:
            body["spec"]["nodeName"] = node_name(cluster)
        store.create(POD, body)

    def placed(self, cluster: str, name: str, namespace: str) -> None:
        """The pod got room: bound to the member's node, starting."""

        def bind(pod: dict[str, Any]) -> None:
            pod["spec"]["nodeName"] = node_name(cluster)
            pod["status"] = {"phase": "Running"}

        self._change(cluster, name, namespace, bind)

    def gone(self, cluster: str, name: str, namespace: str) -> None:
        """The pod no longer exists (it never started, or its termination ended)."""
        with contextlib.suppress(NotFound):
            self.store_of(cluster).delete(POD, namespace, name)

    def _change(
        self, cluster: str, name: str, namespace: str, change: Callable[[dict[str, Any]], None]
    ) -> None:
        with contextlib.suppress(NotFound):
            self.store_of(cluster).mutate(POD, namespace, name, change, copy_result=False)
