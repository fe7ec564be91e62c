"""Status reflection: bindings' aggregatedStatus, the template's own status, Cluster summaries.

Writes are batched: members mark what changed, and `flush()` writes each dirty object once.
Timing as upstream: a member's status reaches the binding's aggregatedStatus through member
informer -> Work status -> binding after `status_delay` seconds, and Cluster resourceSummary
is refreshed only every `cluster_interval` seconds (karmada-controller-manager
--cluster-status-update-frequency, 10 s), so usage placed in between is not seen yet. A Cluster
without a Ready condition gets one at once (the status controller's first pass).
Template status follows Karmada's Deployment aggregation (pkg/resourceinterpreter/default/
native/aggregatestatus.go): sums of the members' counters; observedGeneration moves to the
template's generation only when every member has observed it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from tidal_sim.controllers.common import (
    CLUSTER_KIND,
    WORKLOAD_KINDS,
    Obj,
    find_condition,
    set_condition,
    stored,
)
from tidal_sim.controllers.customizations import InterpreterError, Operation
from tidal_sim.controllers.members import BKey
from tidal_sim.controllers.modelings import allocatable_modelings
from tidal_sim.controllers.quantity import format_list, resource_list
from tidal_sim.kinds import ResourceType
from tidal_sim.store import NotFound

if TYPE_CHECKING:
    from tidal_sim.controllers.host import ControllerHost

log = logging.getLogger(__name__)

_COUNTERS = (
    "replicas",
    "readyReplicas",
    "updatedReplicas",
    "availableReplicas",
    "unavailableReplicas",
)


def _fully_applied(conditions: list[Obj], items: list[Obj], now: str) -> list[Obj]:
    """The binding's conditions with FullyApplied set from its members (none: unchanged)."""
    if not items:
        return conditions
    all_applied = all(i.get("applied") for i in items)
    return set_condition(
        conditions,
        "FullyApplied",
        "True" if all_applied else "False",
        "FullyAppliedSuccess" if all_applied else "FullyAppliedFailed",
        "All works have been successfully applied"
        if all_applied
        else "Failed to apply all works, see status.aggregatedStatus for details",
        now,
    )


def _summed_status(old: Obj, items: list[Obj], generation: int) -> Obj:
    """A workload template's status: its members' counters summed, and observedGeneration
    the template's once every member observed it (zeros left out)."""
    sums = dict.fromkeys(_COUNTERS, 0)
    observed_latest = 0
    for item in items:
        member = item.get("status")
        if member is None:
            continue
        if (
            member.get("observedGeneration", 0) >= member.get("generation", 0)
            and member.get("resourceTemplateGeneration", 0) >= generation
        ):
            observed_latest += 1
        for counter in _COUNTERS:
            sums[counter] += int(member.get(counter, 0))
    new = dict(old)
    new_observed = generation if observed_latest == len(items) else old.get("observedGeneration", 0)
    for key, value in [*sums.items(), ("observedGeneration", new_observed)]:
        if value:
            new[key] = value
        else:
            new.pop(key, None)
    return new


class StatusWriter:
    def __init__(
        self, mgr: ControllerHost, *, status_delay: float = 0.0, cluster_interval: float = 0.0
    ) -> None:
        self.mgr = mgr
        self.status_delay = status_delay
        self.cluster_interval = cluster_interval
        self._bindings: set[BKey] = set()
        self._clusters: set[str] = set()
        self._late_bindings: set[BKey] = set()  # waiting for the status delay
        self._late_clusters: set[str] = set()  # waiting for the next refresh tick

    def mark_binding(self, bkey: BKey) -> None:
        if self.status_delay <= 0:
            self._bindings.add(bkey)
            return
        if not self._late_bindings:

            def release() -> None:
                self._bindings |= self._late_bindings
                self._late_bindings = set()

            self.mgr.after(self.status_delay, release)
        self._late_bindings.add(bkey)

    def mark_cluster(self, name: str, *, urgent: bool = False) -> None:
        """`urgent`: the Cluster's allocatable changed, so its modelings are recomputed now."""
        if urgent or self.cluster_interval <= 0 or not self._has_ready(name):
            self._clusters.add(name)
            return
        if not self._late_clusters:
            now = self.mgr.clock.now()
            tick = (int(now // self.cluster_interval) + 1) * self.cluster_interval

            def refresh() -> None:
                self._clusters |= self._late_clusters
                self._late_clusters = set()

            self.mgr.after(tick - now, refresh)
        self._late_clusters.add(name)

    def _has_ready(self, name: str) -> bool:
        rtype = self.mgr.store.kinds.by_kind("cluster.karmada.io/v1alpha1", CLUSTER_KIND)
        if rtype is None:
            return False
        try:
            cluster = self.mgr.store.get(rtype, None, name, copy_=False)
        except NotFound:
            return False
        return find_condition(cluster, "Ready") is not None

    def pending(self) -> bool:
        return bool(self._bindings or self._clusters)

    def flush(self) -> bool:
        """Write each dirty binding, its template, and each dirty cluster; True if any was dirty."""
        if not self.pending():
            return False
        bindings, self._bindings = sorted(self._bindings), set()
        clusters, self._clusters = sorted(self._clusters), set()
        for bkey in bindings:
            self._flush_binding(bkey)
        for name in clusters:
            self._flush_cluster(name)
        return True

    # -- bindings and templates ----------------------------------------------------------
    def _flush_binding(self, bkey: BKey) -> None:
        kind, namespace, name = bkey
        rtype = self.mgr.binding_type(kind)
        try:
            binding = self.mgr.store.get(rtype, namespace or None, name, copy_=False)
        except NotFound:
            return
        spec = binding.get("spec") or {}
        items = self._member_statuses(bkey, spec)
        status = binding.get("status") or {}
        conditions = _fully_applied(
            list(status.get("conditions") or []), items, self.mgr.clock.rfc3339()
        )
        if (
            status.get("aggregatedStatus", []) != items
            or (status.get("conditions") or []) != conditions
        ):

            def change(obj: Obj) -> None:
                st = obj.setdefault("status", {})
                if items:
                    st["aggregatedStatus"] = items
                else:
                    st.pop("aggregatedStatus", None)
                if conditions:
                    st["conditions"] = conditions

            self.mgr.write(rtype, namespace or None, name, change, subresource="status")
        self._flush_template(spec.get("resource") or {}, items)

    def _member_statuses(self, bkey: BKey, spec: Obj) -> list[Obj]:
        """The aggregatedStatus items of a binding, one per member cluster that reports."""
        items = []
        for cluster in sorted({c.get("name", "") for c in spec.get("clusters") or []}):
            item = self.mgr.members.member_status(bkey, cluster)
            if item is not None:
                items.append(item)
        return items

    def _flush_template(self, resource: dict[str, Any], items: list[Obj]) -> None:
        custom = self.mgr.customizations
        aggregate = resource.get("kind") not in WORKLOAD_KINDS and custom.enabled(
            str(resource.get("apiVersion", "")),
            str(resource.get("kind", "")),
            Operation.AGGREGATE_STATUS,
        )
        rtype = self.mgr.store.kinds.by_kind(
            resource.get("apiVersion", ""), resource.get("kind", "")
        )
        if (resource.get("kind") not in WORKLOAD_KINDS and not aggregate) or rtype is None:
            return
        namespace = resource.get("namespace") or None
        try:
            template = self.mgr.store.get(rtype, namespace, resource.get("name", ""), copy_=False)
        except NotFound:
            return
        if template["metadata"].get("uid") != resource.get("uid"):
            return
        if aggregate:
            self._aggregate(rtype, template, items)
            return
        old = template.get("status") or {}
        new = _summed_status(old, items, template["metadata"].get("generation", 1))
        if new == old:
            return

        def change(obj: Obj) -> None:
            obj["status"] = new

        self.mgr.write(
            rtype,
            namespace,
            resource.get("name", ""),
            change,
            subresource="status" if rtype.has_status else None,
        )

    def _aggregate(self, rtype: ResourceType, template: Obj, items: list[Obj]) -> None:
        """statusAggregation: the script's object's status becomes the template's (an error
        leaves it as it was: rb_status_controller updateResourceStatus returns it)."""
        try:
            # none reported: nil, as the binding's omitted aggregatedStatus reads upstream
            aggregated = self.mgr.customizations.aggregate_status(template, items or None)
        except InterpreterError as exc:
            log.info("sim binding status controller: %s", exc)
            return
        new = aggregated.get("status")
        if not isinstance(new, dict) or new == (template.get("status") or {}):
            return
        meta = template["metadata"]

        def change(obj: Obj) -> None:
            obj["status"] = new

        self.mgr.write(
            rtype,
            meta.get("namespace") or None,
            meta["name"],
            change,
            subresource="status" if rtype.has_status else None,
        )

    # -- clusters ----------------------------------------------------------------------
    def _flush_cluster(self, name: str) -> None:
        found = stored(self.mgr.store, "cluster.karmada.io/v1alpha1", CLUSTER_KIND, name)
        if found is None:
            return
        rtype, cluster = found
        allocated, allocating = self.mgr.members.cluster_usage(name)
        status = cluster.get("status") or {}
        summary = dict(status.get("resourceSummary") or {})
        want_allocated = format_list({k: v for k, v in allocated.items() if v})
        want_allocating = format_list({k: v for k, v in allocating.items() if v})
        needs_ready = find_condition(cluster, "Ready") is None
        want_modelings = allocatable_modelings(
            cluster, resource_list(summary.get("allocatable")), allocated
        )
        unchanged = (summary.get("allocated") or {}, summary.get("allocating") or {}) == (
            want_allocated,
            want_allocating,
        )
        if (
            unchanged
            and want_modelings in (None, summary.get("allocatableModelings"))
            and not needs_ready
        ):
            return
        now = self.mgr.clock.rfc3339()

        def change(obj: Obj) -> None:
            st = obj.setdefault("status", {})
            rs = st.setdefault("resourceSummary", {})
            for key, value in (("allocated", want_allocated), ("allocating", want_allocating)):
                if value:
                    rs[key] = value
                else:
                    rs.pop(key, None)
            if want_modelings is not None:
                rs["allocatableModelings"] = want_modelings
            if find_condition(obj, "Ready") is None:
                st["conditions"] = set_condition(
                    list(st.get("conditions") or []),
                    "Ready",
                    "True",
                    "ClusterReady",
                    "cluster is healthy and ready to accept workloads",
                    now,
                )

        self.mgr.write(rtype, None, name, change, subresource="status")
