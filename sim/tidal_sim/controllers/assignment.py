"""The scheduling algorithm, as functions of a binding and the clusters (pkg/scheduler/core).

Filter (cluster affinity, taints: a Ready=False cluster carries the not-ready NoSchedule taint;
both skipped for clusters the binding already uses), order the candidates by locality score,
then available replicas, then name, keep at most maxGroups of them (cluster spread), and
assign replicas: Duplicated, static weights, dynamic weights / Aggregated (division.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from tidal_sim.clock import parse_rfc3339
from tidal_sim.controllers.common import Obj
from tidal_sim.controllers.division import NotEnoughReplicas, divide_dynamic, divide_static
from tidal_sim.controllers.matching import cluster_matches, untolerated_taint
from tidal_sim.controllers.quantity import Resources, resource_list

# (cluster, per-replica request, binding) -> replicas the cluster can still take: the minimum
# over the scheduler's estimators (general estimator, plus any the topology adds).
Estimate = Callable[[Obj, Resources, Obj], int]

MAX_INT32 = 2**31 - 1
NOT_READY_TAINT = {"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}
UNREACHABLE_TAINT = {"key": "cluster.karmada.io/unreachable", "effect": "NoSchedule"}
_PLACEMENT_KEYS = (
    "clusterAffinity",
    "clusterTolerations",
    "spreadConstraints",
    "replicaScheduling",
)


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


def order_candidates(
    names: list[str], available: dict[str, int], current: dict[str, int]
) -> list[str]:
    """Score order: locality (clusters the binding uses score 100 when it uses any), then
    available replicas counting the binding's own, then name."""

    def rank(name: str) -> tuple[int, int, str]:
        score = 100 if name in current else 0
        return (-score, -(available.get(name, 0) + current.get(name, 0)), name)

    return sorted(names, key=rank)


def assign_with_affinities(
    clusters: dict[str, Obj], binding: Obj, estimate: Estimate, *, keep_empty: bool = False
) -> tuple[list[Obj], str | None]:
    """clusterAffinities: try each term from the observed one (the first after a
    reschedule request); the first that schedules wins, else the first error stands."""
    spec = binding.get("spec") or {}
    placement = spec.get("placement") or {}
    terms = placement.get("clusterAffinities") or []
    if placement.get("clusterAffinity") is not None or not terms:
        affinity = placement.get("clusterAffinity")
        return assign(clusters, binding, affinity, estimate, keep_empty=keep_empty), None
    status = binding.get("status") or {}
    observed = status.get("schedulerObservedAffinityName", "")
    names = [t.get("affinityName", "") for t in terms]
    index = names.index(observed) if observed in names else 0
    if reschedule_required(spec.get("rescheduleTriggeredAt"), status.get("lastScheduledTime")):
        index = 0
    first: FitError | NotEnoughReplicas | SchedulerError | None = None
    for term in terms[index:]:
        try:
            return (
                assign(clusters, binding, term, estimate, keep_empty=keep_empty),
                term.get("affinityName", ""),
            )
        except (FitError, NotEnoughReplicas, SchedulerError) as exc:
            first = first or exc
    assert first is not None
    raise first


def assign(
    clusters: dict[str, Obj],
    binding: Obj,
    affinity: Obj | None,
    estimate: Estimate,
    *,
    keep_empty: bool = False,
) -> list[Obj]:
    """The binding's new spec.clusters. `keep_empty` (karmada-scheduler
    --enable-empty-workload-propagation, off by default): selected clusters assigned no
    replicas are listed too, with none (generic_scheduler.go attachZeroReplicasCluster)."""
    spec = binding.get("spec") or {}
    placement = spec.get("placement") or {}
    current = {c.get("name"): int(c.get("replicas") or 0) for c in spec.get("clusters") or []}
    candidates = filter_clusters(clusters, placement, current, affinity)
    replicas = int(spec.get("replicas") or 0)
    request = resource_list((spec.get("replicaRequirements") or {}).get("resourceRequest"))
    workload = is_workload(spec)
    # estimators are skipped for non-workloads
    available = {
        name: estimate(clusters[name], request, binding) if replicas else 0 for name in candidates
    }
    candidates = order_candidates(candidates, available, current)
    candidates = _spread_by_cluster(
        placement,
        candidates,
        {n: available[n] + current.get(n, 0) for n in candidates},
        replicas,
    )
    if not workload:
        return [{"name": n} for n in candidates]
    return _attach(
        _divide(clusters, binding, candidates, available, current), candidates, keep_empty
    )


def _divide(
    clusters: dict[str, Obj],
    binding: Obj,
    candidates: list[str],
    available: dict[str, int],
    current: dict[str, int],
) -> list[Obj]:
    """The replicas of a workload binding over its candidate clusters, by its placement's
    replica scheduling (duplicated, static weights, dynamic weights or aggregated)."""
    spec = binding.get("spec") or {}
    placement = spec.get("placement") or {}
    replicas = int(spec.get("replicas") or 0)
    strategy = placement.get("replicaScheduling") or {}
    uid = str((spec.get("resource") or {}).get("uid", ""))
    if replica_scheduling_type(placement) == "Duplicated":
        return [_target(n, replicas) for n in candidates if replicas > 0]
    preference = strategy.get("replicaDivisionPreference")
    weights = strategy.get("weightPreference") or {}
    if preference == "Weighted" and not weights.get("dynamicWeight"):
        static = static_weights(clusters, candidates, weights.get("staticWeightList"))
        result = divide_static(replicas, candidates, static, uid)
        return [_target(n, r) for n, r in result.items()]
    if preference not in ("Weighted", "Aggregated"):
        raise SchedulerError(f"unsupported replica division preference {preference!r}")
    result = _divide_dynamic(
        binding, candidates, available, current, aggregated=preference == "Aggregated"
    )
    return [_target(n, r) for n, r in result.items()]


def _divide_dynamic(
    binding: Obj,
    candidates: list[str],
    available: dict[str, int],
    current: dict[str, int],
    *,
    aggregated: bool,
) -> dict[str, int]:
    """Dynamic weights or aggregated: by what the estimators say is available; the error
    names the step that failed (fresh scale, scale down or up) as karmada-scheduler does."""
    spec = binding.get("spec") or {}
    replicas = int(spec.get("replicas") or 0)
    fresh = reschedule_required(
        spec.get("rescheduleTriggeredAt"),
        (binding.get("status") or {}).get("lastScheduledTime"),
    )
    assigned = sum(r for n, r in current.items() if n in available)
    step = (
        "failed to do fresh scale"
        if fresh
        else "failed to scale down"
        if assigned > replicas
        else "failed to scale up"
    )
    try:
        return divide_dynamic(
            replicas,
            [(n, available[n]) for n in candidates],
            current,
            fresh=fresh,
            aggregated=aggregated,
            uid=str((spec.get("resource") or {}).get("uid", "")),
        )
    except NotEnoughReplicas as exc:
        raise _wrapped(exc, step) from exc


def _attach(targets: list[Obj], candidates: list[str], keep_empty: bool) -> list[Obj]:
    if not keep_empty:
        return targets
    named = {t["name"] for t in targets}
    return targets + [{"name": n} for n in candidates if n not in named]


def static_weights(
    clusters: dict[str, Obj], candidates: list[str], rules: list[Obj] | None
) -> dict[str, int]:
    weights: dict[str, int] = {}
    if not rules:
        return {n: 1 for n in candidates}
    for name in candidates:
        cluster = clusters[name]
        best = 0
        for rule in rules:
            if cluster_matches(cluster, rule.get("targetCluster") or {}):
                best = max(best, int(rule.get("weight") or 0))
        if best > 0:
            weights[name] = best
    return weights


def filter_clusters(
    clusters: dict[str, Obj], placement: Obj, current: dict[str, int], affinity: Obj | None
) -> list[str]:
    tolerations = placement.get("clusterTolerations") or []
    out: list[str] = []
    reasons: dict[str, int] = {}
    for name, cluster in sorted(clusters.items()):
        if cluster["metadata"].get("deletionTimestamp"):
            continue
        if affinity is not None and not cluster_matches(cluster, affinity):
            reason = "cluster(s) did not match the placement cluster affinity constraint"
            reasons[reason] = reasons.get(reason, 0) + 1
            continue
        if name not in current:
            taint = untolerated_taint(_taints(cluster), tolerations)
            if taint is not None:
                text = render_taint(taint)
                reason = f"cluster(s) had untolerated taint {{{text}}}"
                reasons[reason] = reasons.get(reason, 0) + 1
                continue
        out.append(name)
    if not out:
        detail = ", ".join(sorted(f"{n} {r}" for r, n in reasons.items())) or "no cluster exists"
        raise FitError(f"0/{len(clusters)} clusters are available: {detail}.")
    return out


def _static_weights(placement: Obj) -> bool:
    """Divided by static weights (or by equal weights: no weightPreference)."""
    strategy = placement.get("replicaScheduling") or {}
    weights = strategy.get("weightPreference") or {}
    return bool(
        strategy.get("replicaSchedulingType") == "Divided"
        and strategy.get("replicaDivisionPreference") == "Weighted"
        and (not weights or (weights.get("staticWeightList") and not weights.get("dynamicWeight")))
    )


def _roomier(
    chosen: list[str], rest: list[str], available: dict[str, int], replicas: int
) -> list[str]:
    """While the chosen clusters cannot hold the replicas, swap the last chosen ones (last
    first) for the roomiest of the rest that has more room."""
    index = len(chosen) - 1
    while sum(available[n] for n in chosen) < replicas and index >= 0:
        best, best_value = None, available[chosen[index]]
        for i, name in enumerate(rest):
            if available[name] > best_value:
                best, best_value = i, available[name]
        if best is not None:
            chosen[index], rest[best] = rest[best], chosen[index]
        index -= 1
    return chosen


def _spread_by_cluster(
    placement: Obj, candidates: list[str], available: dict[str, int], replicas: int
) -> list[str]:
    """SpreadConstraints by cluster (spreadconstraint/select_clusters_by_cluster.go): keep at
    most maxGroups of the best candidates, swapping in roomier ones when replicas don't fit.
    Region/zone/provider spreading is not emulated (all candidates are kept)."""
    constraints = {c.get("spreadByField"): c for c in placement.get("spreadConstraints") or []}
    if "cluster" not in constraints or "region" in constraints or _static_weights(placement):
        return candidates  # (static weights ignore spread constraints)
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
    chosen = _roomier(list(candidates[:need]), list(candidates[need:]), available, replicas)
    if sum(available[n] for n in chosen) < replicas:
        raise SchedulerError(
            f"failed to select clusters: no enough resource when selecting {need} clusters"
        )
    return chosen


def _wrapped(exc: NotEnoughReplicas, step: str) -> NotEnoughReplicas:
    wrapped = NotEnoughReplicas(exc.available)
    wrapped.args = (f"failed to assign replicas: {step}: {exc.args[0]}",)
    return wrapped


def _taints(cluster: Obj) -> list[dict[str, Any]]:
    taints = list((cluster.get("spec") or {}).get("taints") or [])
    ready = None
    for cond in (cluster.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            ready = cond.get("status")
    # cluster_controller.go taintClusterByCondition: no Ready condition yet counts as NotReady
    if ready == "Unknown":
        taints.append(UNREACHABLE_TAINT)
    elif ready != "True":
        taints.append(NOT_READY_TAINT)
    return taints


def render_taint(taint: Mapping[str, Any]) -> str:
    """corev1.Taint.ToString: `key=value:effect`, or `key:effect` without a value."""
    key, value, effect = taint.get("key"), taint.get("value"), taint.get("effect")
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def _target(name: str, replicas: int) -> Obj:
    return {"name": name, "replicas": replicas} if replicas else {"name": name}
