"""The wave gates, evaluated on every binding change seen by the watch:

- triggered: touch — the binding's placement equals the policy's new placement and a policy
  claims it again (after a swap the binding has no claim label until the new policy claims
  it; Karmada's scheduler ignores unclaimed bindings);
  rebalance — spec.rescheduleTriggeredAt is at or after the rebalancer's creationTimestamp;
- scheduled: schedulerObservedGeneration == generation (and, for a rebalance,
  lastScheduledTime at or after the trigger); Scheduled=False (NoClusterFit, Unschedulable)
  fails the wave with the scheduler's message;
- converged: ready replicas per cluster reach the binding's assignment (health for kinds
  without replicas);
- floors: every floor, for every workload of the switch, at every change.
Server timestamps are compared only with server timestamps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tidal.domain.floors import FloorRule, FloorViolation, check_floors
from tidal.engine.resolve import Workload, assignment
from tidal.engine.triggers import normalize_placement
from tidal.karmada.names import claim_labels

Obj = dict[str, Any]
GATES = ("triggered", "scheduled", "converged", "floors")
UNSCHEDULABLE_REASONS = ("NoClusterFit", "Unschedulable", "SchedulerError")


def parse_time(value: object) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def _walk(obj: Any, path: Sequence[str]) -> Any:
    for part in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def ready_by_cluster(binding: Mapping[str, Any] | None, ready_field: str | None = None
                     ) -> dict[str, int]:
    """Ready replicas per member cluster from the binding's aggregatedStatus."""
    path = (ready_field or "status.readyReplicas").split(".")
    if path and path[0] == "status":
        path = path[1:]
    out: dict[str, int] = {}
    for item in ((binding or {}).get("status") or {}).get("aggregatedStatus") or []:
        value = _walk(item.get("status") or {}, path)
        out[str(item.get("clusterName"))] = int(value) if isinstance(value, int | float) else 0
    return out


def healthy_clusters(binding: Mapping[str, Any] | None) -> set[str]:
    items = ((binding or {}).get("status") or {}).get("aggregatedStatus") or []
    return {str(i.get("clusterName")) for i in items if i.get("health") == "Healthy"}


def scheduled_condition(binding: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cond in (binding.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Scheduled":
            return dict(cond)
    return None


@dataclass
class WaveTarget:
    """What the wave waits for, per workload."""

    workload: Workload
    placement: Any | None = None  # normalized target placement (touch)
    trigger_time: datetime | None = None  # rebalancer creationTimestamp (rebalance)


@dataclass
class GateReport:
    passed: set[str] = field(default_factory=set)
    failure: str = ""  # unschedulable | floor_breach
    reason: str = ""
    violations: list[FloorViolation] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # workloads whose binding vanished
    converged: int = 0
    ready: dict[str, int] = field(default_factory=dict)
    assigned: dict[str, int] = field(default_factory=dict)


def workload_state(target: WaveTarget, binding: Obj, ready_field: str | None
                   ) -> tuple[bool, bool, bool, str]:
    """(triggered, scheduled, converged, unschedulable message) for one binding."""
    spec = binding.get("spec") or {}
    status = binding.get("status") or {}
    triggered = True
    if target.placement is not None:
        labels = (binding.get("metadata") or {}).get("labels") or {}
        triggered = normalize_placement(spec.get("placement")) == target.placement and \
            any(labels.get(key) for key in claim_labels())
    triggered_at = parse_time(spec.get("rescheduleTriggeredAt"))
    if target.trigger_time is not None:
        triggered = triggered and triggered_at is not None and triggered_at >= target.trigger_time
    generation = (binding.get("metadata") or {}).get("generation")
    observed = status.get("schedulerObservedGeneration")
    scheduled = triggered and generation is not None and observed == generation
    if scheduled and target.trigger_time is not None:
        last = parse_time(status.get("lastScheduledTime"))
        scheduled = last is not None and triggered_at is not None and last >= triggered_at
    cond = scheduled_condition(binding)
    problem = ""
    if triggered and cond is not None and cond.get("status") == "False" \
            and observed == generation:
        problem = f"{cond.get('reason')}: {cond.get('message', '')}".strip()
        scheduled = False
    if scheduled and cond is not None and cond.get("status") != "True":
        scheduled = False
    converged = False
    if scheduled:
        wanted = assignment(binding)
        if target.workload.replicas is None:
            healthy = healthy_clusters(binding)
            converged = all(c in healthy for c in wanted)
        else:
            ready = ready_by_cluster(binding, ready_field)
            converged = all(ready.get(c, 0) >= n for c, n in wanted.items())
    return triggered, scheduled, converged, problem


def evaluate(wave: Sequence[WaveTarget], everyone: Sequence[Workload],
             cache: Mapping[str, Obj], floors: Sequence[FloorRule],
             before: Mapping[str, Mapping[str, int]], ready_field: str | None = None
             ) -> GateReport:
    """Evaluate the gates of one wave against the latest bindings."""
    report = GateReport()
    states = []
    for target in wave:
        binding = cache.get(target.workload.binding_key)
        if binding is None:
            report.missing.append(target.workload.name)
            continue
        state = workload_state(target, binding, ready_field)
        states.append(state)
        if state[3] and not report.failure:
            report.failure, report.reason = "unschedulable", \
                f"{target.workload.name}: {state[3]}"
        report.converged += int(state[2])
        for c, n in ready_by_cluster(binding, ready_field).items():
            report.ready[c] = report.ready.get(c, 0) + n
        for c, n in assignment(binding).items():
            report.assigned[c] = report.assigned.get(c, 0) + n
    for w in everyone:
        binding = cache.get(w.binding_key)
        if binding is None:
            continue
        kept = set(before.get(w.name, {})) & set(assignment(binding))
        report.violations.extend(check_floors(w.name, w.replicas,
                                              ready_by_cluster(binding, ready_field),
                                              floors, kept))
    if report.violations:
        report.failure = "floor_breach"
        report.reason = f"floor breached: {report.violations[0]}"
    else:
        report.passed.add("floors")
    if all(s[0] for s in states):
        report.passed.add("triggered")
        if all(s[1] for s in states):
            report.passed.add("scheduled")
            if all(s[2] for s in states):
                report.passed.add("converged")
    return report


def lowest_ready(everyone: Sequence[Workload], cache: Mapping[str, Obj], clusters: Sequence[str],
                 ready_field: str | None = None) -> dict[str, int]:
    """The lowest ready count of any replica-bearing workload per floor cluster."""
    out: dict[str, int] = {}
    for w in everyone:
        if not w.replicas:
            continue
        ready = ready_by_cluster(cache.get(w.binding_key), ready_field)
        for c in clusters:
            out[c] = min(out.get(c, ready.get(c, 0)), ready.get(c, 0))
    return out
