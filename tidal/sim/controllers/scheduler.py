"""The scheduler: decides spec.clusters of bindings (pkg/scheduler upstream).

A binding is scheduled when its placement differs from the applied-placement annotation
(clusterAffinity, clusterTolerations, spreadConstraints, replicaScheduling), when its replicas no
longer add up, when a reschedule was requested (spec.rescheduleTriggeredAt after
status.lastScheduledTime, second precision), and always when Duplicated or not a workload.
Filter: cluster affinity and taints (a Ready=False cluster carries the not-ready NoSchedule
taint), skipped for clusters the binding already uses. Candidates are ordered by locality score,
then available replicas, then name.
"""

from __future__ import annotations

import contextlib
import json
from collections import deque
from typing import TYPE_CHECKING, Any

from tidal.domain.division import (
    AssignmentMode,
    Unschedulable,
    dynamic_divide,
    static_weight_divide,
)
from tidal.sim.clock import parse_rfc3339
from tidal.sim.controllers.common import (
    APPLIED_PLACEMENT_ANNOTATION,
    CPP_ID_LABEL,
    PP_ID_LABEL,
    Obj,
    cluster_ready,
    labels_of,
    set_condition,
)
from tidal.sim.controllers.matching import cluster_matches, untolerated_taint
from tidal.sim.controllers.quantity import resource_list
from tidal.sim.store import NotFound

if TYPE_CHECKING:
    from tidal.sim.controllers.manager import ControllerManager

BKey = tuple[str, str, str]
MAX_INT32 = 2**31 - 1
SUCCESS_MESSAGE = "Binding has been scheduled successfully."
NOT_READY_TAINT = {"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}
UNREACHABLE_TAINT = {"key": "cluster.karmada.io/unreachable", "effect": "NoSchedule"}
_PLACEMENT_KEYS = (
    "clusterAffinity",
    "clusterTolerations",
    "spreadConstraints",
    "replicaScheduling",
)
_RETRY_SECONDS = (1.0, 2.0, 4.0, 8.0, 10.0)


class FitError(Exception):
    """No cluster passed the filters."""


class SchedulerError(Exception):
    """Any other scheduling failure: reported as reason SchedulerError and retried."""


def placement_changed(placement: Obj, applied_json: str | None, observed_affinity: str) -> bool:
    """pkg/scheduler/helper.go placementChanged."""
    if not applied_json:
        return True
    try:
        applied = json.loads(applied_json)
    except ValueError:
        return False
    if placement == applied:
        return False
    if any(placement.get(k) != applied.get(k) for k in _PLACEMENT_KEYS):
        return True
    if not observed_affinity:
        return True
    term = _affinity_term(placement, observed_affinity)
    applied_term = _affinity_term(applied, observed_affinity)
    return term is None or applied_term is None or term != applied_term


def _affinity_term(placement: Obj, name: str) -> Obj | None:
    for term in placement.get("clusterAffinities") or []:
        if term.get("affinityName") == name:
            return dict(term)
    return None


def reschedule_required(triggered_at: str | None, last_scheduled: str | None) -> bool:
    """pkg/util/binding.go RescheduleRequired (metav1.Time: whole seconds)."""
    if not triggered_at or not last_scheduled:
        return False
    return int(parse_rfc3339(triggered_at)) > int(parse_rfc3339(last_scheduled))


def replica_scheduling_type(placement: Obj) -> str:
    strategy = placement.get("replicaScheduling")
    if not strategy:
        return "Duplicated"
    return str(strategy.get("replicaSchedulingType") or "Duplicated")


def is_workload(spec: Obj) -> bool:
    return bool(spec.get("replicas")) or spec.get("replicaRequirements") is not None


def replicas_changed(spec: Obj, placement: Obj) -> bool:
    """util.IsBindingReplicasChanged."""
    if not placement.get("replicaScheduling"):
        return False
    replicas = int(spec.get("replicas") or 0)
    clusters = spec.get("clusters") or []
    if replica_scheduling_type(placement) == "Duplicated":
        return any(int(c.get("replicas") or 0) != replicas for c in clusters)
    return sum(int(c.get("replicas") or 0) for c in clusters) != replicas


def max_available_replicas(cluster: Obj, request: dict[str, int]) -> int:
    """The general estimator: free allocatable (minus allocated and allocating) per replica."""
    summary = (cluster.get("status") or {}).get("resourceSummary")
    if not summary:
        return 0
    allocatable = resource_list(summary.get("allocatable"))
    allocated = resource_list(summary.get("allocated"))
    allocating = resource_list(summary.get("allocating"))

    def free(name: str) -> int:
        return allocatable.get(name, 0) - allocated.get(name, 0) - allocating.get(name, 0)

    best = free("pods")
    if best <= 0:
        return 0
    for name, amount in request.items():
        if amount <= 0 or name == "pods":
            continue
        if name not in allocatable:
            return 0
        available = free(name)
        if available <= 0:
            return 0
        best = min(best, available // amount)
    return min(best, MAX_INT32)


class Scheduler:
    def __init__(self, mgr: ControllerManager, latency: float) -> None:
        self.mgr = mgr
        self.latency = latency
        self.clusters: dict[str, Obj] = {}
        self.bindings: set[BKey] = set()
        self.ready: deque[BKey] = deque()
        self._queued: set[BKey] = set()
        self._waiting: set[BKey] = set()  # behind the latency timer
        self._retries: dict[BKey, int] = {}

    # -- events ------------------------------------------------------------------------
    def on_binding(self, etype: str, bkey: BKey, obj: Obj, old: Obj | None) -> None:
        if etype == "DELETED":
            self.bindings.discard(bkey)
            self._retries.pop(bkey, None)
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
            for bkey in sorted(self.bindings):
                self.enqueue(bkey)
            return
        old_cap = ((old or {}).get("status") or {}).get("resourceSummary", {}).get("allocatable")
        new_cap = (cluster.get("status") or {}).get("resourceSummary", {}).get("allocatable")
        if old_cap != new_cap:
            for bkey in sorted(self._retries):
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
        spec = binding.get("spec") or {}
        status = binding.get("status") or {}
        placement = spec.get("placement") or {}
        applied = (binding["metadata"].get("annotations") or {}).get(APPLIED_PLACEMENT_ANNOTATION)
        if (
            placement_changed(placement, applied, status.get("schedulerObservedAffinityName", ""))
            or replicas_changed(spec, placement)
            or reschedule_required(
                spec.get("rescheduleTriggeredAt"), status.get("lastScheduledTime")
            )
            or not is_workload(spec)
            or replica_scheduling_type(placement) == "Duplicated"
            or any(c.get("name") not in self.clusters for c in spec.get("clusters") or [])
        ):
            self.schedule(bkey, binding)
            return
        generation = binding["metadata"].get("generation", 1)
        if status.get("schedulerObservedGeneration") != generation:

            def observe(obj: Obj) -> None:
                obj.setdefault("status", {})["schedulerObservedGeneration"] = generation

            self.mgr.write(rtype, bkey[1] or None, bkey[2], observe, subresource="status")

    def schedule(self, bkey: BKey, binding: Obj) -> None:
        rtype = self.mgr.binding_type(bkey[0])
        namespace, name = bkey[1] or None, bkey[2]
        spec = binding.get("spec") or {}
        placement = spec.get("placement") or {}
        generation = binding["metadata"].get("generation", 1)
        affinity_name: str | None = None
        try:
            result, affinity_name = self._assign_with_affinities(binding)
            condition = ("True", "Success", SUCCESS_MESSAGE)
        except FitError as exc:
            result, condition = None, ("False", "NoClusterFit", str(exc))
        except Unschedulable as exc:
            self._set_condition(bkey, ("False", "Unschedulable", exc.args[0]), None)
            self._retry(bkey)
            return
        except SchedulerError as exc:
            self._set_condition(bkey, ("False", "SchedulerError", str(exc)), None)
            self._retry(bkey)
            return
        self._retries.pop(bkey, None)
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
        if annotations.get(APPLIED_PLACEMENT_ANNOTATION) != placement_json or spec.get(
            "clusters"
        ) != (result or None):
            binding = self.mgr.write(rtype, namespace, name, write)
        # Upstream patches status with the pre-patch generation and fixes it up on the next
        # round; writing the post-patch generation at once reaches the same state in one write.
        generation = binding["metadata"].get("generation", generation)
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

    def _retry(self, bkey: BKey) -> None:
        attempt = self._retries.get(bkey, 0)
        self._retries[bkey] = attempt + 1
        delay = _RETRY_SECONDS[min(attempt, len(_RETRY_SECONDS) - 1)]

        def again() -> None:
            if bkey in self._retries:
                self._push(bkey)

        self.mgr.after(delay, again)

    # -- the algorithm -----------------------------------------------------------------
    def _assign_with_affinities(self, binding: Obj) -> tuple[list[Obj], str | None]:
        """clusterAffinities: try each term from the observed one (the first after a
        reschedule request); the first that schedules wins, else the first error stands."""
        spec = binding.get("spec") or {}
        placement = spec.get("placement") or {}
        terms = placement.get("clusterAffinities") or []
        if placement.get("clusterAffinity") is not None or not terms:
            return self._assign(binding, placement.get("clusterAffinity")), None
        status = binding.get("status") or {}
        observed = status.get("schedulerObservedAffinityName", "")
        names = [t.get("affinityName", "") for t in terms]
        index = names.index(observed) if observed in names else 0
        if reschedule_required(spec.get("rescheduleTriggeredAt"), status.get("lastScheduledTime")):
            index = 0
        first: FitError | Unschedulable | SchedulerError | None = None
        for term in terms[index:]:
            try:
                return self._assign(binding, term), term.get("affinityName", "")
            except (FitError, Unschedulable, SchedulerError) as exc:
                first = first or exc
        assert first is not None
        raise first

    def _assign(self, binding: Obj, affinity: Obj | None) -> list[Obj]:
        spec = binding.get("spec") or {}
        placement = spec.get("placement") or {}
        current = {c.get("name"): int(c.get("replicas") or 0) for c in spec.get("clusters") or []}
        candidates = self._filter(placement, current, affinity)
        replicas = int(spec.get("replicas") or 0)
        request = resource_list((spec.get("replicaRequirements") or {}).get("resourceRequest"))
        workload = is_workload(spec)
        available: dict[str, int] = {}
        for name in candidates:
            if replicas == 0:
                available[name] = replicas  # estimators are skipped for non-workloads
            else:
                available[name] = max_available_replicas(self.clusters[name], request)
        locality = bool(current)
        candidates.sort(
            key=lambda n: (
                -(100 if locality and n in current else 0),
                -(available[n] + current.get(n, 0)),
                n,
            )
        )
        candidates = _spread_by_cluster(
            placement,
            candidates,
            {n: available[n] + current.get(n, 0) for n in candidates},
            replicas,
        )
        if not workload:
            return [{"name": n} for n in candidates]
        kind = replica_scheduling_type(placement)
        strategy = placement.get("replicaScheduling") or {}
        uid = str((spec.get("resource") or {}).get("uid", ""))
        if kind == "Duplicated":
            return [_target(n, replicas) for n in candidates if replicas > 0]
        preference = strategy.get("replicaDivisionPreference")
        weights = strategy.get("weightPreference") or {}
        if preference == "Weighted" and not weights.get("dynamicWeight"):
            static = self._static_weights(candidates, weights.get("staticWeightList"))
            result = static_weight_divide(replicas, candidates, static, uid)
            return [_target(n, r) for n, r in result.items()]
        if preference not in ("Weighted", "Aggregated"):
            raise SchedulerError(f"unsupported replica division preference {preference!r}")
        mode: AssignmentMode = "Steady"
        if reschedule_required(
            spec.get("rescheduleTriggeredAt"),
            (binding.get("status") or {}).get("lastScheduledTime"),
        ):
            mode = "Fresh"
        previous = {n: r for n, r in current.items() if n in available}
        assigned = sum(previous.values())
        step = (
            "failed to do fresh scale"
            if mode == "Fresh"
            else "failed to scale down"
            if assigned > replicas
            else "failed to scale up"
        )
        try:
            result = dynamic_divide(
                replicas,
                [(n, available[n]) for n in candidates],
                current,
                mode=mode,
                aggregated=preference == "Aggregated",
                tie_uid=uid,
            )
        except Unschedulable as exc:
            raise _wrapped(exc, step) from exc
        return [_target(n, r) for n, r in result.items()]

    def _static_weights(self, candidates: list[str], rules: list[Obj] | None) -> dict[str, int]:
        weights: dict[str, int] = {}
        if not rules:
            return {n: 1 for n in candidates}
        for name in candidates:
            cluster = self.clusters[name]
            best = 0
            for rule in rules:
                if cluster_matches(cluster, rule.get("targetCluster") or {}):
                    best = max(best, int(rule.get("weight") or 0))
            if best > 0:
                weights[name] = best
        return weights

    def _filter(self, placement: Obj, current: dict[str, int], affinity: Obj | None) -> list[str]:
        tolerations = placement.get("clusterTolerations") or []
        out: list[str] = []
        reasons: dict[str, int] = {}
        for name, cluster in sorted(self.clusters.items()):
            if cluster["metadata"].get("deletionTimestamp"):
                continue
            if affinity is not None and not cluster_matches(cluster, affinity):
                reason = "cluster(s) did not match the placement cluster affinity constraint"
                reasons[reason] = reasons.get(reason, 0) + 1
                continue
            if name not in current:
                taint = untolerated_taint(_taints(cluster), tolerations)
                if taint is not None:
                    text = f"{taint.get('key')}={taint.get('value', '')}:{taint.get('effect')}"
                    reason = f"cluster(s) had untolerated taint {{{text}}}"
                    reasons[reason] = reasons.get(reason, 0) + 1
                    continue
            out.append(name)
        if not out:
            detail = (
                ", ".join(sorted(f"{n} {r}" for r, n in reasons.items())) or "no cluster exists"
            )
            raise FitError(f"0/{len(self.clusters)} clusters are available: {detail}.")
        return out


def _spread_by_cluster(
    placement: Obj, candidates: list[str], available: dict[str, int], replicas: int
) -> list[str]:
    """SpreadConstraints by cluster (spreadconstraint/select_clusters_by_cluster.go): keep at
    most maxGroups of the best candidates, swapping in roomier ones when replicas don't fit.
    Region/zone/provider spreading is not emulated (all candidates are kept)."""
    constraints = {c.get("spreadByField"): c for c in placement.get("spreadConstraints") or []}
    strategy = placement.get("replicaScheduling") or {}
    weights = strategy.get("weightPreference") or {}
    if "cluster" not in constraints or "region" in constraints:
        return candidates
    if (
        strategy.get("replicaSchedulingType") == "Divided"
        and strategy.get("replicaDivisionPreference") == "Weighted"
        and (not weights or (weights.get("staticWeightList") and not weights.get("dynamicWeight")))
    ):
        return candidates  # static weights ignore spread constraints
    constraint = constraints["cluster"]
    min_groups = int(constraint.get("minGroups") or 0)
    max_groups = int(constraint.get("maxGroups") or 0) or len(candidates)
    if len(candidates) < min_groups:
        raise SchedulerError(
            "failed to select clusters: the number of feasible clusters is less than "
            "spreadConstraint.MinGroups"
        )
    need = min(len(candidates), max_groups)
    if replica_scheduling_type(placement) == "Duplicated":
        return candidates[:need]
    chosen, rest = list(candidates[:need]), list(candidates[need:])
    index = len(chosen) - 1
    while sum(available[n] for n in chosen) < replicas and index >= 0:
        best, best_value = None, available[chosen[index]]
        for i, name in enumerate(rest):
            if available[name] > best_value:
                best, best_value = i, available[name]
        if best is not None:
            chosen[index], rest[best] = rest[best], chosen[index]
        index -= 1
    if sum(available[n] for n in chosen) < replicas:
        raise SchedulerError(
            f"failed to select clusters: no enough resource when selecting {need} clusters"
        )
    return chosen


def _wrapped(exc: Unschedulable, step: str) -> Unschedulable:
    wrapped = Unschedulable(exc.available)
    wrapped.args = (f"failed to assign replicas: {step}: {exc.args[0]}",)
    return wrapped


def _taints(cluster: Obj) -> list[dict[str, Any]]:
    taints = list((cluster.get("spec") or {}).get("taints") or [])
    ready = None
    for cond in (cluster.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            ready = cond.get("status")
    if ready == "False":
        taints.append(NOT_READY_TAINT)
    elif ready == "Unknown":
        taints.append(UNREACHABLE_TAINT)
    return taints


def _target(name: str, replicas: int) -> Obj:
    return {"name": name, "replicas": replicas} if replicas else {"name": name}
