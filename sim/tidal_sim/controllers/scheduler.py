"""The scheduler: decides spec.clusters of bindings (pkg/scheduler upstream).

A binding is scheduled when its placement differs from the applied-placement annotation
(clusterAffinity, clusterTolerations, spreadConstraints, replicaScheduling), when its replicas no
longer add up, when a reschedule was requested (spec.rescheduleTriggeredAt after
status.lastScheduledTime, second precision), and always when Duplicated or not a workload.
The algorithm itself lives in assignment.py.

Queues (pkg/scheduler/internal/queue/scheduling_queue.go): an Unschedulable binding waits in
the unschedulable queue until a relevant event (its own spec, a Cluster's labels, generation,
readiness, creation or deletion: event_handler.go updateCluster) or for up to 5 minutes,
flushed every 30 s; a status-only Cluster change (resourceSummary) does not requeue it. Other
errors back off 1 s doubling to 10 s. A successful schedule writes schedulerObservedGeneration
with the generation seen before its own spec patch, so it catches up on the next pass
(scheduler.go patchBindingStatusCondition, then doScheduleBinding's "no scheduling required"
branch). With SchedulingOvercommitProtection (alpha, off) the estimator deducts the replicas
this scheduler placed since each cluster's summary was last refreshed.
"""

from __future__ import annotations

import contextlib
import json
from collections import deque
from typing import TYPE_CHECKING

from tidal_sim.controllers.assignment import (
    FitError,
    SchedulerError,
    assign_with_affinities,
    is_workload,
    placement_changed,
    replica_scheduling_type,
    replicas_changed,
    reschedule_required,
)
from tidal_sim.controllers.common import (
    APPLIED_PLACEMENT_ANNOTATION,
    CPP_ID_LABEL,
    PP_ID_LABEL,
    Obj,
    cluster_ready,
    labels_of,
    set_condition,
)
from tidal_sim.controllers.division import NotEnoughReplicas
from tidal_sim.controllers.estimator import FEATURE_RESOURCE_MODELING, general_estimate
from tidal_sim.controllers.quantity import Resources, format_list, resource_list
from tidal_sim.controllers.team_estimator import UNAUTHENTIC_REPLICA
from tidal_sim.store import NotFound
from tidal_sim.version import KarmadaVersion

if TYPE_CHECKING:
    from tidal_sim.controllers.host import ControllerHost

BKey = tuple[str, str, str]
SUCCESS_MESSAGE = "Binding has been scheduled successfully."
_RETRY_SECONDS = (1.0, 2.0, 4.0, 8.0, 10.0)
UNSCHEDULABLE_MAX_WAIT = 300.0  # DefaultBindingMaxInUnschedulableBindingsDuration
UNSCHEDULABLE_FLUSH = 30.0  # flushUnschedulableBindingsLeftover period
FEATURE_OVERCOMMIT_PROTECTION = "SchedulingOvercommitProtection"


class Scheduler:
    def __init__(self, mgr: ControllerHost, latency: float) -> None:
        self.mgr = mgr
        self.latency = latency
        self.clusters: dict[str, Obj] = {}
        self.bindings: set[BKey] = set()
        self.ready: deque[BKey] = deque()
        self._queued: set[BKey] = set()
        self._waiting: set[BKey] = set()  # behind the latency timer
        self._retries: dict[BKey, int] = {}
        self._unschedulable: dict[BKey, float] = {}  # waiting since (sim seconds)
        self._assumed: dict[str, list[tuple[Resources, int]]] = {}  # cluster -> placed since
        # its summary was last refreshed (request, replicas): SchedulingOvercommitProtection

    # -- events ------------------------------------------------------------------------
    def on_binding(self, etype: str, bkey: BKey, obj: Obj, old: Obj | None) -> None:
        if etype == "DELETED":
            self.bindings.discard(bkey)
            self._retries.pop(bkey, None)
            self._unschedulable.pop(bkey, None)
            return
        self.bindings.add(bkey)
        if not self._accepts(obj):
            return
        if (
            etype == "MODIFIED"
            and old is not None
            and old["metadata"].get("generation") == obj["metadata"].get("generation")
        ):
            return
        self.enqueue(bkey)

    def on_cluster(self, etype: str, cluster: Obj, old: Obj | None) -> None:
        name = cluster["metadata"]["name"]
        if etype == "DELETED":
            self.clusters.pop(name, None)
        else:
            self.clusters[name] = cluster
        if _summary_usage(old) != _summary_usage(cluster):
            self._assumed.pop(name, None)  # the summary now reflects what was placed
        relevant = (
            etype != "MODIFIED"
            or old is None
            or (
                labels_of(old) != labels_of(cluster)
                or old["metadata"].get("generation") != cluster["metadata"].get("generation")
                or cluster_ready(old) != cluster_ready(cluster)
            )
        )
        if relevant:
            self._unschedulable.clear()
            for bkey in sorted(self.bindings):
                self.enqueue(bkey)

    def _accepts(self, binding: Obj) -> bool:
        labels = labels_of(binding)
        if not (labels.get(PP_ID_LABEL) or labels.get(CPP_ID_LABEL)):
            return False
        suspension = (binding.get("spec") or {}).get("suspension") or {}
        return not suspension.get("scheduling")

    # -- queue -------------------------------------------------------------------------
    def enqueue(self, bkey: BKey, delay: float | None = None) -> None:
        wait = self.latency if delay is None else delay
        if bkey in self._queued or (wait > 0 and bkey in self._waiting):
            return
        if wait > 0:
            self._waiting.add(bkey)

            def due() -> None:
                self._waiting.discard(bkey)
                self._push(bkey)

            self.mgr.after(wait, due)
            return
        self._push(bkey)

    def _push(self, bkey: BKey) -> None:
        if bkey not in self._queued:
            self._queued.add(bkey)
            self.ready.append(bkey)

    def run_one(self) -> bool:
        if not self.ready:
            return False
        bkey = self.ready.popleft()
        self._queued.discard(bkey)
        self.do_schedule(bkey)
        return True

    # -- one binding -------------------------------------------------------------------
    def do_schedule(self, bkey: BKey) -> None:
        rtype = self.mgr.binding_type(bkey[0])
        try:
            binding = self.mgr.store.get(rtype, bkey[1] or None, bkey[2], copy_=False)
        except NotFound:
            return
        if not self._accepts(binding):
            return
        if self._needs_schedule(binding):
            self.schedule(bkey, binding)
            return
        status = binding.get("status") or {}
        generation = binding["metadata"].get("generation", 1)
        if status.get("schedulerObservedGeneration") != generation:

            def observe(obj: Obj) -> None:
                obj.setdefault("status", {})["schedulerObservedGeneration"] = generation

            self.mgr.write(rtype, bkey[1] or None, bkey[2], observe, subresource="status")

    def _needs_schedule(self, binding: Obj) -> bool:
        """Whether the binding is scheduled again: its placement or replicas changed, a
        reschedule was asked for, it is no divided workload, or a cluster of it is gone."""
        spec = binding.get("spec") or {}
        status = binding.get("status") or {}
        placement = spec.get("placement") or {}
        applied = (binding["metadata"].get("annotations") or {}).get(APPLIED_PLACEMENT_ANNOTATION)
        return bool(
            placement_changed(placement, applied, status.get("schedulerObservedAffinityName", ""))
            or replicas_changed(spec, placement)
            or reschedule_required(
                spec.get("rescheduleTriggeredAt"), status.get("lastScheduledTime")
            )
            or not is_workload(spec)
            or replica_scheduling_type(placement) == "Duplicated"
            or any(c.get("name") not in self.clusters for c in spec.get("clusters") or [])
        )

    def schedule(self, bkey: BKey, binding: Obj) -> None:
        rtype = self.mgr.binding_type(bkey[0])
        namespace, name = bkey[1] or None, bkey[2]
        spec = binding.get("spec") or {}
        placement = spec.get("placement") or {}
        generation = binding["metadata"].get("generation", 1)
        affinity_name: str | None = None
        try:
            result, affinity_name = assign_with_affinities(
                self.clusters,
                binding,
                self.estimate,
                keep_empty=self.mgr.empty_workload_propagation,
            )
            condition = ("True", "Success", SUCCESS_MESSAGE)
        except FitError as exc:
            result, condition = None, ("False", "NoClusterFit", str(exc))
        except NotEnoughReplicas as exc:
            self._set_condition(bkey, ("False", "Unschedulable", exc.args[0]), None)
            self._park(bkey)
            return
        except SchedulerError as exc:
            self._set_condition(bkey, ("False", "SchedulerError", str(exc)), None)
            self._retry(bkey)
            return
        self._retries.pop(bkey, None)
        self._unschedulable.pop(bkey, None)
        placement_json = json.dumps(placement, separators=(",", ":"))

        def write(obj: Obj) -> None:
            meta = obj["metadata"]
            annotations = meta.get("annotations") or {}
            annotations[APPLIED_PLACEMENT_ANNOTATION] = placement_json
            meta["annotations"] = annotations
            if result:
                obj.setdefault("spec", {})["clusters"] = result
            else:
                obj.setdefault("spec", {}).pop("clusters", None)

        annotations = binding["metadata"].get("annotations") or {}
        if result and self._overcommit_protection():
            self._assume(binding, result)
        if annotations.get(APPLIED_PLACEMENT_ANNOTATION) != placement_json or spec.get(
            "clusters"
        ) != (result or None):
            self.mgr.write(rtype, namespace, name, write)
        # The status carries the generation seen before the patch above; the patch's own event
        # brings the binding back and do_schedule then catches the generation up.
        self._set_condition(
            bkey, condition, generation if condition[0] == "True" else None, affinity_name
        )

    def _set_condition(
        self,
        bkey: BKey,
        condition: tuple[str, str, str],
        generation: int | None,
        affinity_name: str | None = None,
    ) -> None:
        rtype = self.mgr.binding_type(bkey[0])
        now = self.mgr.clock.rfc3339()

        def write(obj: Obj) -> None:
            status = obj.setdefault("status", {})
            status["conditions"] = set_condition(
                list(status.get("conditions") or []), "Scheduled", *condition, now
            )
            if generation is not None:
                status["schedulerObservedGeneration"] = generation
                status["lastScheduledTime"] = now
            if affinity_name:
                status["schedulerObservedAffinityName"] = affinity_name

        with contextlib.suppress(NotFound):
            current = self.mgr.store.get(rtype, bkey[1] or None, bkey[2], copy_=False)
            probe: Obj = {"status": dict(current.get("status") or {})}
            write(probe)
            if probe["status"] != (current.get("status") or {}):
                self.mgr.write(rtype, bkey[1] or None, bkey[2], write, subresource="status")

    def _park(self, bkey: BKey) -> None:
        """Into the unschedulable queue: back at the first 30 s flush after 5 minutes, unless
        a relevant event comes first."""
        now = self.mgr.clock.now()
        self._unschedulable[bkey] = now
        due = now + UNSCHEDULABLE_MAX_WAIT
        flush = (int(due // UNSCHEDULABLE_FLUSH) + 1) * UNSCHEDULABLE_FLUSH

        def leftover() -> None:
            if self._unschedulable.get(bkey) == now:
                del self._unschedulable[bkey]
                self._push(bkey)

        self.mgr.after(flush - now, leftover)

    def _assume(self, binding: Obj, result: list[Obj]) -> None:
        spec = binding.get("spec") or {}
        request = resource_list((spec.get("replicaRequirements") or {}).get("resourceRequest"))
        before = {c.get("name"): int(c.get("replicas") or 0) for c in spec.get("clusters") or []}
        for target in result:
            added = int(target.get("replicas") or 0) - before.get(target["name"], 0)
            if added > 0:
                self._assumed.setdefault(target["name"], []).append((request, added))

    def _retry(self, bkey: BKey) -> None:
        attempt = self._retries.get(bkey, 0)
        self._retries[bkey] = attempt + 1
        delay = _RETRY_SECONDS[min(attempt, len(_RETRY_SECONDS) - 1)]

        def again() -> None:
            if bkey in self._retries:
                self._push(bkey)

        self.mgr.after(delay, again)

    # -- estimators ----------------------------------------------------------------------
    def estimate(self, cluster: Obj, request: Resources, binding: Obj) -> int:
        """The minimum over the estimators that can tell (calAvailableReplicas)."""
        assumed = self._assumed.get(cluster["metadata"]["name"])
        if assumed and self._overcommit_protection():
            cluster = _with_assumed(cluster, assumed)
        general = general_estimate(
            cluster,
            request,
            self.mgr.karmada_version,
            resource_modeling=f"{FEATURE_RESOURCE_MODELING}=false" not in self.mgr.feature_gates,
        )
        teams = self.mgr.team_estimator
        if not teams.teams:
            return general
        name = cluster["metadata"]["name"]
        own = sum(
            int(t.get("replicas") or 0)
            for t in (binding.get("spec") or {}).get("clusters") or []
            if t.get("name") == name
        )
        team = teams.estimate(
            name, self._template_labels(binding), self.mgr.clock.now(), self._placed, own
        )
        # mergeReplicaResults: UnauthenticReplica (-1) is "cannot tell", not a number
        return general if team is None or team == UNAUTHENTIC_REPLICA else min(general, team)

    def _overcommit_protection(self) -> bool:
        """The alpha gate, which exists from v1.18 on."""
        return FEATURE_OVERCOMMIT_PROTECTION in self.mgr.feature_gates and (
            self.mgr.karmada_version >= KarmadaVersion.V1_18
        )

    def _template_labels(self, binding: Obj) -> dict[str, str]:
        ref = (binding.get("spec") or {}).get("resource") or {}
        rtype = self.mgr.store.kinds.by_kind(ref.get("apiVersion", ""), ref.get("kind", ""))
        if rtype is None:
            return {}
        try:
            template = self.mgr.store.get(
                rtype, ref.get("namespace") or None, ref.get("name", ""), copy_=False
            )
        except NotFound:
            return {}
        return labels_of(template)

    def _placed(self, cluster: str) -> list[tuple[dict[str, str], int]]:
        out: list[tuple[dict[str, str], int]] = []
        for bkey in sorted(self.bindings):
            try:
                obj = self.mgr.store.get(
                    self.mgr.binding_type(bkey[0]), bkey[1] or None, bkey[2], copy_=False
                )
            except NotFound:
                continue
            for target in (obj.get("spec") or {}).get("clusters") or []:
                if target.get("name") == cluster and target.get("replicas"):
                    out.append((self._template_labels(obj), int(target["replicas"])))
        return out

    # -- the algorithm -----------------------------------------------------------------


def _summary_usage(cluster: Obj | None) -> tuple[object, object]:
    summary = ((cluster or {}).get("status") or {}).get("resourceSummary") or {}
    return summary.get("allocated"), summary.get("allocating")


def _with_assumed(cluster: Obj, assumed: list[tuple[Resources, int]]) -> Obj:
    """general.go deductAssumedWorkloadsFromSummary: in-flight replicas added to allocating."""
    status = dict(cluster.get("status") or {})
    summary = dict(status.get("resourceSummary") or {})
    allocating = resource_list(summary.get("allocating"))
    for request, replicas in assumed:
        allocating["pods"] = allocating.get("pods", 0) + replicas
        for name, amount in request.items():
            allocating[name] = allocating.get(name, 0) + amount * replicas
    summary["allocating"] = format_list(allocating)
    status["resourceSummary"] = summary
    return {**cluster, "status": status}
