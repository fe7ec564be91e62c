"""Run one wave: trigger it, then watch the bindings until every gate passes, a gate fails,
a floor breaks, or waveTimeout runs out. Used for forward waves and for rollback waves."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tidal.domain.clock import Clock
from tidal.domain.floors import FloorRule, floor_clusters
from tidal.engine import gates, stall, triggers
from tidal.engine.events import (
    Emitter,
    EventBase,
    FloorBreached,
    FloorObserved,
    GatePassed,
    WaveProgress,
    WaveStarted,
    WorkloadSkipped,
)
from tidal.engine.journal import RunState, WaveState
from tidal.engine.resolve import Workload
from tidal.karmada import rebalancers as rebalancers_api
from tidal.karmada.bindings import BindingWatch, key_of
from tidal.karmada.client import KarmadaClient, Obj
from tidal.karmada.clusters import list_clusters
from tidal.karmada.errors import KarmadaError, NotFound

RETRIGGER_ATTEMPTS = 5
REBALANCER_CHECK_SECONDS = 1.0


def iso_now(clock: Clock) -> str:
    """The clock's now as RFC 3339 with a Z (UTC)."""
    return clock.now().isoformat().replace("+00:00", "Z")


@dataclass
class SwitchContext:
    client: KarmadaClient
    schedule: str
    window: str
    run_id: str
    clock: Clock
    emitter: Emitter
    state: RunState
    save: Callable[[], None]
    trigger: str
    floors: list[FloorRule]
    everyone: list[Workload]
    before: dict[str, dict[str, int]]
    ready_field: str | None = None
    wave_timeout: float = 600.0
    skipped: set[str] = field(default_factory=set)
    floor_seen: dict[str, int] = field(default_factory=dict)

    def event_base(self, wave: int | None) -> EventBase:
        return EventBase(schedule=self.schedule, window=self.window, run_id=self.run_id,
                         wave=wave)

    def now_iso(self) -> str:
        return iso_now(self.clock)


@dataclass
class WaveOutcome:
    ok: bool
    failure: str = ""  # floor_breach | timeout | unschedulable | binding_not_found | api_error
    reason: str = ""


def _namespace_of(workloads: Sequence[Workload]) -> tuple[str | None, bool]:
    namespaces = {w.key.namespace for w in workloads}
    if namespaces == {""}:
        return None, True
    if len(namespaces) == 1:
        return next(iter(namespaces)), False
    return None, False


def _template_gone(ctx: SwitchContext, w: Workload) -> bool:
    try:
        res = ctx.client.resource_for(w.key.api_version, w.key.kind)
        ctx.client.request("get", res, "GET", res.path(w.key.namespace or None, w.key.name))
    except NotFound:
        return True
    return False


def run_wave(ctx: SwitchContext, wave: WaveState, workloads: Sequence[Workload], *,
             placements: dict[str, object], rollback: bool = False) -> WaveOutcome:
    """Trigger the wave's workloads and gate them. `placements`: policy key -> normalized
    target placement (used for touch)."""
    index = wave.index
    base = ctx.event_base(index)
    live = [w for w in workloads if w.name not in ctx.skipped]
    ctx.emitter.emit(WaveStarted(**base, workloads=tuple(w.name for w in live),
                                 trigger=ctx.trigger, rollback=rollback))
    namespace, cluster_scoped = _namespace_of(ctx.everyone or live)
    watch = BindingWatch(ctx.client, namespace, cluster_scoped=cluster_scoped)
    watch.start()
    done_before = wave.rollback_triggered if rollback else wave.triggered
    targets = {w.name: gates.WaveTarget(w) for w in live}
    if ctx.trigger in ("touch", "both"):
        for w in live:
            targets[w.name].placement = placements.get(w.policy)
        ctx.save()
        touched = triggers.touch_wave(ctx.client, live, stamp=ctx.now_iso(), run_id=ctx.run_id,
                                      skip=done_before)
        for name in touched.deleted:
            _skip(ctx, index, name, "deleted", targets)
        done_before[:] = sorted(set(done_before) | set(touched.touched))
        ctx.save()
    deadline = ctx.clock.monotonic() + ctx.wave_timeout
    if ctx.trigger == "both":
        # The touch first, until its own (Steady) schedule is done: a Lazy policy must claim
        # the binding before a rebalance can work, and the rebalance must come after it.
        outcome = _gate(ctx, wave, targets, watch, deadline, until="scheduled")
        if not outcome.ok:
            return outcome
    if ctx.trigger in ("rebalance", "both"):
        failed = _rebalance(ctx, wave, [w for w in live if w.name in targets], targets, watch,
                            rollback)
        if failed is not None:
            return failed
    return _gate(ctx, wave, targets, watch, deadline)


def _skip(ctx: SwitchContext, index: int, name: str, reason: str,
          targets: dict[str, gates.WaveTarget]) -> None:
    ctx.skipped.add(name)
    targets.pop(name, None)
    ctx.everyone = [w for w in ctx.everyone if w.name != name]
    note = f"{name} left out: template {reason} during the switch"
    if note not in ctx.state.warnings:
        ctx.state.warnings.append(note)
    ctx.emitter.emit(WorkloadSkipped(**ctx.event_base(index), workload=name,
                                     reason=reason))


def _rebalance(ctx: SwitchContext, wave: WaveState, live: list[Workload],
               targets: dict[str, gates.WaveTarget], watch: BindingWatch,
               rollback: bool) -> WaveOutcome | None:
    """One WorkloadRebalancer for the wave; a new one for workloads whose last schedule fell
    in the same second as the rebalancer (Karmada would not see the trigger as later). On a
    resume, workloads the previous rebalancer already got rescheduled are not triggered again."""
    pending = _not_yet_rescheduled(ctx, wave, live, targets, watch, rollback)
    for _ in range(RETRIGGER_ATTEMPTS):
        if not pending:
            return None
        name = triggers.rebalancer_name(ctx.schedule, ctx.run_id, wave.index - 1,
                                        len(wave.rebalancers), rollback)
        wave.rebalancers.append(name)
        ctx.save()
        try:
            obj = triggers.rebalance_wave(ctx.client, name, pending, schedule=ctx.schedule,
                                          run_id=ctx.run_id)
        except KarmadaError as exc:
            return WaveOutcome(False, "api_error", f"creating WorkloadRebalancer {name}: {exc}")
        created = gates.parse_time((obj.get("metadata") or {}).get("creationTimestamp"))
        again: list[Workload] = []
        for w in pending:
            target = targets.get(w.name)
            if target is None:
                continue
            target.trigger_time = created
            last = gates.parse_time(((watch.cache.get(w.binding_key) or {}).get("status") or {})
                                    .get("lastScheduledTime"))
            if created is not None and last is not None and last >= created:
                again.append(w)
        if not again:
            return None
        ctx.clock.sleep(0.3)
        pending = again
    return None


def _not_yet_rescheduled(ctx: SwitchContext, wave: WaveState, live: list[Workload],
                         targets: dict[str, gates.WaveTarget], watch: BindingWatch,
                         rollback: bool) -> list[Workload]:
    same_direction = [n for n in wave.rebalancers
                      if triggers.is_rollback_rebalancer(n) == rollback]
    if not same_direction:
        return list(live)
    try:
        previous = rebalancers_api.get_rebalancer(ctx.client, same_direction[-1])
    except NotFound:
        return list(live)  # gone (TTL): trigger everything again
    created = gates.parse_time((previous.get("metadata") or {}).get("creationTimestamp"))
    if created is None:
        return list(live)
    out = []
    for w in live:
        binding = watch.cache.get(w.binding_key) or {}
        spec, status = binding.get("spec") or {}, binding.get("status") or {}
        triggered = gates.parse_time(spec.get("rescheduleTriggeredAt"))
        last = gates.parse_time(status.get("lastScheduledTime"))
        if triggered is not None and triggered >= created and last is not None \
                and last >= triggered and w.name in targets:
            targets[w.name].trigger_time = created
        else:
            out.append(w)
    return out


def _rebalancer_failures(ctx: SwitchContext, wave: WaveState) -> list[tuple[str, str]]:
    """(workload, reason) of every Failed entry of the wave's rebalancers."""
    out: list[tuple[str, str]] = []
    for name in wave.rebalancers[-1:]:
        try:
            obj = rebalancers_api.get_rebalancer(ctx.client, name)
        except NotFound:
            continue
        for item in (obj.get("status") or {}).get("observedWorkloads") or []:
            if item.get("result") == "Failed":
                ref = item.get("workload") or {}
                key = f"{ref.get('namespace', '')}/{ref.get('kind')}/{ref.get('name')}"
                out.append((key, str(item.get("reason") or "Failed")))
    return out


def _gate(ctx: SwitchContext, wave: WaveState, targets: dict[str, gates.WaveTarget],
          watch: BindingWatch, deadline: float, until: str = "converged") -> WaveOutcome:
    index = wave.index
    base = ctx.event_base(index)
    passed: set[str] = set()
    clusters = floor_clusters(ctx.floors)
    last_check = ctx.clock.monotonic()
    tracker = _tracker(ctx, targets, watch)
    while True:
        report = tracker.report()
        _observe_floors(ctx, index, watch.cache, clusters)
        for gate in gates.GATES:
            if gate in report.passed and gate not in passed and gate != "floors":
                passed.add(gate)
                ctx.emitter.emit(GatePassed(**base, gate=gate))
        if report.failure == "floor_breach":
            for v in report.violations:
                ctx.emitter.emit(FloorBreached(**base, cluster=v.cluster,
                                               workload=v.workload, ready=v.ready,
                                               required=v.required, floor=v.floor))
            return WaveOutcome(False, "floor_breach", report.reason)
        if report.failure:
            return WaveOutcome(False, report.failure, report.reason)
        if report.missing:
            for name in report.missing:
                w = targets[name].workload
                if not _template_gone(ctx, w):
                    return WaveOutcome(False, "binding_not_found",
                                       f"{name}: ReferencedBindingNotFound")
                _skip(ctx, index, name, "deleted", targets)
            tracker = _tracker(ctx, targets, watch)
            continue
        if until in report.passed:
            if until == "converged":
                ctx.emitter.emit(GatePassed(**base, gate="floors"))
            return WaveOutcome(True)
        now = ctx.clock.monotonic()
        if wave.rebalancers and "triggered" not in report.passed and \
                now - last_check >= REBALANCER_CHECK_SECONDS:
            last_check = now
            gone = False
            for name, reason in _rebalancer_failures(ctx, wave):
                if name in targets:
                    if not _template_gone(ctx, targets[name].workload):
                        return WaveOutcome(False, "binding_not_found", f"{name}: {reason}")
                    _skip(ctx, index, name, "deleted", targets)
                    gone = True
            if gone:
                tracker = _tracker(ctx, targets, watch)
                continue
        remaining = deadline - now
        if remaining <= 0:
            return WaveOutcome(False, "timeout",
                               _timeout_reason(ctx, report, len(targets), tracker))
        ctx.emitter.emit(WaveProgress(**base, ready=report.ready,
                                      assigned=report.assigned, converged=report.converged,
                                      total=len(targets)))
        for obj, deleted in watch.changes(min(remaining, 5.0)):
            tracker.update(key_of(obj), None if deleted else obj)
            probe = tracker.report()
            if probe.failure or probe.missing or until in probe.passed or \
                    probe.passed - passed - {"floors"}:
                break
            if ctx.clock.monotonic() >= deadline:
                break


def _tracker(ctx: SwitchContext, targets: dict[str, gates.WaveTarget],
             watch: BindingWatch) -> gates.GateTracker:
    return gates.GateTracker(list(targets.values()), ctx.everyone, ctx.floors, ctx.before,
                             ctx.ready_field).load(watch.cache)


def _timeout_reason(ctx: SwitchContext, report: gates.GateReport, total: int,
                    tracker: gates.GateTracker) -> str:
    stuck = "triggered" if "triggered" not in report.passed else \
        "scheduled" if "scheduled" not in report.passed else "converged"
    parts = [f"not {stuck} within waveTimeout {ctx.wave_timeout:g}s: {report.converged}/{total} "
             f"workloads converged; ready {report.ready}, assigned {report.assigned}"]
    short = [s for s in tracker.shortfalls() if s[1]]
    if stuck == "converged" and short:
        parts.append(stall.describe_shortfalls(short))
        waiting = sorted({c for _, clusters in short for c in clusters})
        requests = [w.workload.request for w in tracker.targets.values()]
        try:
            cause = stall.likely_cause(waiting, list_clusters(ctx.client), requests)
        except KarmadaError:
            cause = ""  # the reason stands without it
        if cause:
            parts.append(cause)
    return "; ".join(parts)


def _observe_floors(ctx: SwitchContext, index: int, cache: dict[str, Obj],
                    clusters: Sequence[str]) -> None:
    if not clusters:
        return
    lowest = gates.lowest_ready(ctx.everyone, cache, clusters, ctx.ready_field)
    required = {c: max((f.min_ready_replicas or 0) for f in ctx.floors
                       if c in f.named_clusters()) for c in clusters}
    for cluster, value in lowest.items():
        if ctx.floor_seen.get(cluster) != value:
            ctx.floor_seen[cluster] = value
            ctx.emitter.emit(FloorObserved(**ctx.event_base(index), cluster=cluster,
                                           min_ready=value, required=required[cluster]))


