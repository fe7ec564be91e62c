"""The wave gates, evaluated on every binding change seen by the watch:

- triggered: touch — the binding's placement equals the policy's new placement and a policy
  claims it again (after a swap the binding has no claim label until the new policy claims
  it; Karmada's scheduler ignores unclaimed bindings);
  rebalance — spec.rescheduleTriggeredAt is at or after the rebalancer's creationTimestamp;
- scheduled: schedulerObservedGeneration == generation (and, for a rebalance,
  lastScheduledTime at or after the trigger); Scheduled=False (NoClusterFit, Unschedulable)
  on a triggered binding fails the wave at once with the scheduler's message, also while
  schedulerObservedGeneration stays behind: Karmada's scheduler advances it only on success
  (pkg/scheduler/scheduler.go patchBindingStatusCondition), so waiting for it would only end
  at waveTimeout;
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


def live_replicas(workload: Workload, binding: Mapping[str, Any]) -> int | None:
    """Desired replicas now (someone may scale a workload during the switch)."""
    if workload.replicas is None:
        return None
    value = (binding.get("spec") or {}).get("replicas")
    return int(value) if isinstance(value, int) else workload.replicas


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
    if triggered and cond is not None and cond.get("status") == "False":
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


class GateTracker:
    """The gates of one wave, updated one binding at a time (a watch event costs O(1) work
    for the changed binding plus O(wave) to aggregate, never O(all workloads))."""

    def __init__(self, wave: Sequence[WaveTarget], everyone: Sequence[Workload],
                 floors: Sequence[FloorRule], before: Mapping[str, Mapping[str, int]],
                 ready_field: str | None = None) -> None:
        self.targets = {t.workload.binding_key: t for t in wave}
        self.people = {w.binding_key: w for w in everyone}
        self.floors = list(floors)
        self.before = before
        self.ready_field = ready_field
        self.states: dict[str, tuple[bool, bool, bool, str]] = {}
        self.violations: dict[str, list[FloorViolation]] = {}
        self.ready: dict[str, dict[str, int]] = {}
        self.assigned: dict[str, dict[str, int]] = {}
        self.missing: set[str] = set(self.targets)

    def load(self, cache: Mapping[str, Obj]) -> GateTracker:
        for key in set(self.targets) | set(self.people):
            self.update(key, cache.get(key))
        return self

    def update(self, key: str, binding: Obj | None) -> None:
        target = self.targets.get(key)
        if target is not None:
            if binding is None:
                self.missing.add(key)
                self.states.pop(key, None)
                self.ready.pop(key, None)
                self.assigned.pop(key, None)
            else:
                self.missing.discard(key)
                self.states[key] = workload_state(target, binding, self.ready_field)
                self.ready[key] = ready_by_cluster(binding, self.ready_field)
                self.assigned[key] = assignment(binding)
        w = self.people.get(key)
        if w is not None:
            if binding is None:
                self.violations.pop(key, None)
                return
            kept = set(self.before.get(w.name, {})) & set(assignment(binding))
            found = check_floors(w.name, live_replicas(w, binding),
                                 ready_by_cluster(binding, self.ready_field), self.floors, kept)
            if found:
                self.violations[key] = found
            else:
                self.violations.pop(key, None)

    def shortfalls(self) -> list[tuple[str, dict[str, tuple[int, int]]]]:
        """Wave workloads not converged: cluster -> (ready, assigned) where ready < assigned."""
        out = []
        for key, target in sorted(self.targets.items(), key=lambda kv: kv[1].workload.name):
            state = self.states.get(key)
            if state is None or state[2]:
                continue
            ready, assigned = self.ready.get(key, {}), self.assigned.get(key, {})
            short = {c: (ready.get(c, 0), n) for c, n in assigned.items() if ready.get(c, 0) < n}
            out.append((target.workload.name, short))
        return out

    def report(self) -> GateReport:
        report = GateReport()
        report.missing = sorted(self.targets[k].workload.name for k in self.missing)
        states = [self.states[k] for k in self.targets if k in self.states]
        failing: list[str] = []
        for key in self.targets:
            state = self.states.get(key)
            if state is not None and state[3]:
                failing.append(f"{self.targets[key].workload.name}: {state[3]}")
            for c, n in self.ready.get(key, {}).items():
                report.ready[c] = report.ready.get(c, 0) + n
            for c, n in self.assigned.get(key, {}).items():
                report.assigned[c] = report.assigned.get(c, 0) + n
        if failing:
            report.failure = "unschedulable"
            report.reason = "; ".join(sorted(failing))
        report.converged = sum(1 for st in states if st[2])
        report.violations = [v for key in sorted(self.violations) for v in self.violations[key]]
        if report.violations:
            report.failure = "floor_breach"
            report.reason = f"floor breached: {report.violations[0]}"
        else:
            report.passed.add("floors")
        if all(st[0] for st in states):
            report.passed.add("triggered")
            if all(st[1] for st in states):
                report.passed.add("scheduled")
                if all(st[2] for st in states):
                    report.passed.add("converged")
        return report


def evaluate(wave: Sequence[WaveTarget], everyone: Sequence[Workload],
             cache: Mapping[str, Obj], floors: Sequence[FloorRule],
             before: Mapping[str, Mapping[str, int]], ready_field: str | None = None
             ) -> GateReport:
    """Evaluate the gates of one wave against the latest bindings (all at once)."""
    return GateTracker(wave, everyone, floors, before, ready_field).load(cache).report()


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
