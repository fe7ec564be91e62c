"""The wave gates, evaluated on every binding change seen by the watch:

- triggered: touch — the binding's placement equals the policy's new placement and a policy
  claims it again (after a swap the binding has no claim label until the new policy claims
  it; Karmada's scheduler ignores unclaimed bindings);
  rebalance — spec.rescheduleTriggeredAt is at or after the rebalancer's creationTimestamp;
- scheduled: schedulerObservedGeneration == generation (and, for a rebalance,
  lastScheduledTime at or after the trigger and after the scheduling the trigger found, in whole
  seconds: Karmada drops a trigger that is not a later second than lastScheduledTime,
  pkg/util/binding.go RescheduleRequired, and then only catches the generation up);
  Scheduled=False (NoClusterFit, Unschedulable)
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

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeVar, cast

from tidal.domain.floors import FloorRule, FloorViolation, check_floors
from tidal.domain.placement import Placement
from tidal.engine.resolve import Workload
from tidal.engine.states import FailureReason, Gate
from tidal.karmada.objects import Obj
from tidal.karmada.views import BindingView, parse_time

__all__ = [
    "GATES",
    "GateReport",
    "GateTracker",
    "TriggerRule",
    "WaveTarget",
    "evaluate",
    "lowest_ready",
    "parse_time",
    "ready_by_cluster",
    "rebalance_triggered",
    "rescheduled",
    "second",
    "touch_triggered",
    "workload_state",
]

GATES = tuple(Gate)


T = TypeVar("T")


def ready_by_cluster(
    binding: Mapping[str, Any] | None, ready_field: str | None = None
) -> dict[str, int]:
    """Ready replicas per member cluster from the binding's aggregatedStatus."""
    return BindingView.of(binding).ready(ready_field)


def live_replicas(workload: Workload, binding: BindingView) -> int | None:
    """Desired replicas now (someone may scale a workload during the switch)."""
    if workload.replicas is None:
        return None
    value = binding.replicas
    return value if value is not None else workload.replicas


class TriggerRule(Protocol):
    """When a binding counts as triggered (one per trigger strategy)."""

    def triggered(self, target: WaveTarget, binding: BindingView) -> bool: ...


@dataclass
class WaveTarget:
    """What the wave waits for, per workload."""

    workload: Workload
    placement: Placement | None = None  # the policy's target placement (touch)
    trigger_time: datetime | None = None  # rebalancer creationTimestamp (rebalance)
    # lastScheduledTime when the trigger was made: that scheduling is never the reschedule
    scheduled_before: datetime | None = None
    rule: TriggerRule | None = None  # None: as the fields above say

    def triggered(self, binding: BindingView) -> bool:
        if self.rule is not None:
            return self.rule.triggered(self, binding)
        return touch_triggered(self, binding) and rebalance_triggered(self, binding)


def touch_triggered(target: WaveTarget, binding: BindingView) -> bool:
    """The binding carries the policy's new placement and a policy claims it again."""
    if target.placement is None:
        return True
    return binding.placement == target.placement and binding.claimed


def second(value: datetime) -> datetime:
    """A server timestamp as Karmada compares it (metav1.Time: whole seconds)."""
    return value.replace(microsecond=0)


def rebalance_triggered(target: WaveTarget, binding: BindingView) -> bool:
    """The binding's reschedule was triggered at or after the rebalancer was created."""
    if target.trigger_time is None:
        return True
    at = binding.reschedule_triggered_at
    return at is not None and second(at) >= second(target.trigger_time)


def rescheduled(target: WaveTarget, binding: BindingView) -> bool:
    """A scheduling in or after the trigger's second that is not the one the trigger found."""
    last, at = binding.last_scheduled, binding.reschedule_triggered_at
    if last is None or at is None or second(last) < second(at):
        return False
    before = target.scheduled_before
    return before is None or second(last) > second(before)


def old_split_members(
    assigned: Mapping[str, int], raised: Mapping[str, int], members: Mapping[str, int | None]
) -> list[str]:
    """Member clusters still running the split from before a move: one no longer `assigned`
    that still reports the workload, or one no override `raised` running more replicas than
    assigned (its Work not yet rendered from the new split)."""
    return [
        cluster
        for cluster, replicas in members.items()
        if cluster not in assigned
        or (cluster not in raised and replicas is not None and replicas > assigned[cluster])
    ]


@dataclass
class GateReport:
    passed: set[Gate] = field(default_factory=set)
    failure: FailureReason | None = None  # unschedulable | floor_breach
    reason: str = ""
    violations: list[FloorViolation] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # workloads whose binding vanished
    converged: int = 0
    ready: dict[str, int] = field(default_factory=dict)
    assigned: dict[str, int] = field(default_factory=dict)


def workload_state(
    target: WaveTarget, binding: Obj, ready_field: str | None
) -> tuple[bool, bool, bool, str]:
    """(triggered, scheduled, converged, unschedulable message) for one binding."""
    view = BindingView(binding)
    triggered = target.triggered(view)
    generation = view.generation
    scheduled = (
        triggered and generation is not None and view.scheduler_observed_generation == generation
    )
    if scheduled and target.trigger_time is not None:
        scheduled = rescheduled(target, view)
    cond = view.scheduled
    problem = ""
    if triggered and cond is not None and cond.status == "False":
        problem = f"{cond.reason}: {cond.message}".strip()
        scheduled = False
    if scheduled and cond is not None and cond.status != "True":
        scheduled = False
    converged = False
    if scheduled:
        wanted = view.assignment()
        if target.workload.replicas is None:
            healthy = view.healthy_clusters()
            converged = all(c in healthy for c in wanted)
        else:
            ready = view.ready(ready_field)
            converged = all(ready.get(c, 0) >= n for c, n in wanted.items())
    return triggered, scheduled, converged, problem


class BindingMemo:
    """What a run computed from each binding (its floor violations, its ready replicas), kept
    while the binding's resourceVersion stays the same: each wait of a wave builds a tracker
    over every workload of the run, and only the bindings changed since are read again. One
    per run (its floors, pre-switch splits and ready field do not change)."""

    def __init__(self) -> None:
        self._values: dict[tuple[str, str], tuple[str, object]] = {}

    def get(self, what: str, key: str, binding: Obj, compute: Callable[[], T]) -> T:
        version = str((binding.get("metadata") or {}).get("resourceVersion") or "")
        if not version:
            return compute()
        hit = self._values.get((what, key))
        if hit is not None and hit[0] == version:
            return cast(T, hit[1])
        value = compute()
        self._values[(what, key)] = (version, value)
        return value


def _status_pending(binding: Obj) -> bool:
    """Scheduled to members but no member status collected yet (right after a reschedule the
    aggregated status is rebuilt): not known, which is not 0 ready. A member that runs nothing
    ready still reports itself, so an outage is never hidden by this."""
    view = BindingView(binding)
    return not view.status.get("aggregatedStatus") and bool(view.assignment())


class GateTracker:
    """The gates of one wave, updated one binding at a time (a watch event costs O(1) work
    for the changed binding plus O(wave) to aggregate, never O(all workloads))."""

    def __init__(
        self,
        wave: Sequence[WaveTarget],
        everyone: Sequence[Workload],
        floors: Sequence[FloorRule],
        before: Mapping[str, Mapping[str, int]],
        ready_field: str | None = None,
        memo: BindingMemo | None = None,
        recovering: set[str] | None = None,
    ) -> None:
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
        self.memo = memo
        # bindings below their floors when the rollback began (shared with the run): not held
        # against a wave until they met their floors once
        self.recovering = set() if recovering is None else recovering

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
                view = BindingView(binding)
                self.ready[key] = view.ready(self.ready_field)
                self.assigned[key] = view.assignment()
        w = self.people.get(key)
        if w is not None:
            if binding is None:
                self.violations.pop(key, None)
                return
            if _status_pending(binding):
                return  # its members' status is being collected: the last verdict stands
            found = (
                self._floors(key, w, binding)
                if self.memo is None
                else self.memo.get(
                    "floors", key, binding, functools.partial(self._floors, key, w, binding)
                )
            )
            if found and key not in self.recovering:
                self.violations[key] = found
                return
            if not found:
                self.recovering.discard(key)  # it met its floors: from now on they count
            self.violations.pop(key, None)

    def _floors(self, key: str, w: Workload, binding: Obj) -> list[FloorViolation]:
        view = BindingView(binding)
        kept = set(self.before.get(w.name, {})) & set(view.assignment())
        return check_floors(
            w.name, live_replicas(w, view), view.ready(self.ready_field), self.floors, kept
        )

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
        self._totals(report)
        failing = sorted(
            f"{self.targets[key].workload.name}: {state[3]}"
            for key in self.targets
            if (state := self.states.get(key)) is not None and state[3]
        )
        if failing:
            report.failure = FailureReason.UNSCHEDULABLE
            report.reason = "; ".join(failing)
        report.converged = sum(1 for st in states if st[2])
        report.violations = [v for key in sorted(self.violations) for v in self.violations[key]]
        if report.violations:
            report.failure = FailureReason.FLOOR_BREACH
            report.reason = f"floor breached: {report.violations[0]}"
        else:
            report.passed.add(Gate.FLOORS)
        report.passed |= _passed(states)
        return report

    def _totals(self, report: GateReport) -> None:
        """The wave's ready and assigned replicas per cluster, into the report."""
        for key in self.targets:
            for c, n in self.ready.get(key, {}).items():
                report.ready[c] = report.ready.get(c, 0) + n
            for c, n in self.assigned.get(key, {}).items():
                report.assigned[c] = report.assigned.get(c, 0) + n


def _passed(states: Sequence[tuple[bool, bool, bool, str]]) -> set[Gate]:
    """The gates every workload passed, in order (each needs the ones before)."""
    passed: set[Gate] = set()
    for gate, index in ((Gate.TRIGGERED, 0), (Gate.SCHEDULED, 1), (Gate.CONVERGED, 2)):
        if not all(st[index] for st in states):
            break
        passed.add(gate)
    return passed


def evaluate(
    wave: Sequence[WaveTarget],
    everyone: Sequence[Workload],
    cache: Mapping[str, Obj],
    floors: Sequence[FloorRule],
    before: Mapping[str, Mapping[str, int]],
    ready_field: str | None = None,
) -> GateReport:
    """Evaluate the gates of one wave against the latest bindings (all at once)."""
    return GateTracker(wave, everyone, floors, before, ready_field).load(cache).report()


def lowest_ready(
    everyone: Sequence[Workload],
    cache: Mapping[str, Obj],
    clusters: Sequence[str],
    ready_field: str | None = None,
    memo: BindingMemo | None = None,
) -> dict[str, int]:
    """The lowest ready count of any replica-bearing workload per floor cluster."""
    out: dict[str, int] = {}
    for w in everyone:
        if not w.replicas:
            continue
        binding = cache.get(w.binding_key)
        ready = (
            ready_by_cluster(binding, ready_field)
            if memo is None or binding is None
            else memo.get(
                "ready",
                w.binding_key,
                binding,
                functools.partial(ready_by_cluster, binding, ready_field),
            )
        )
        for c in clusters:
            out[c] = min(out.get(c, ready.get(c, 0)), ready.get(c, 0))
    return out
