"""Run one wave: trigger it, then watch the bindings until every gate passes, a gate fails,
a floor breaks, or waveTimeout runs out. Used for forward waves and for rollback waves."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tidal.domain.clock import Clock
from tidal.domain.floors import FloorRule, floor_clusters
from tidal.domain.waves import WorkloadKey
from tidal.engine import bridging, gates, rebalancing, room, stall, surging, triggers
from tidal.engine.budget import OwnBudget, SurgeBudget
from tidal.engine.destinations import DestinationHealth
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
from tidal.engine.outcome import WaveOutcome
from tidal.engine.resolve import Workload, selected_by
from tidal.engine.states import Direction, FailureReason, Gate, Trigger
from tidal.engine.strategies import TriggerStrategy
from tidal.engine.surge_follow import lift_rescaled
from tidal.karmada import rebalancers as rebalancers_api
from tidal.karmada.bindings import BindingWatch, key_of, list_bindings
from tidal.karmada.client import KarmadaClient, Obj
from tidal.karmada.clusters import list_clusters
from tidal.karmada.errors import KarmadaError, NotFound
from tidal.karmada.informer import SharedReads
from tidal.karmada.views import ObjectView

REBALANCER_CHECK_SECONDS = 1.0


def iso_now(clock: Clock) -> str:
    """The clock's now as RFC 3339 with a Z (UTC)."""
    return clock.now().isoformat().replace("+00:00", "Z")


@dataclass
class SwitchContext:
    """What every wave of one run shares (the run's identity, strategy, floors and the
    workloads seen so far); owned by the Run."""

    client: KarmadaClient
    clock: Clock
    emitter: Emitter
    state: RunState
    save: Callable[[], None]
    strategy: TriggerStrategy
    floors: list[FloorRule]
    everyone: list[Workload]
    before: dict[str, dict[str, int]]
    ready_field: str | None = None
    wave_timeout: float = 600.0
    skipped: set[str] = field(default_factory=set)
    floor_seen: dict[str, int] = field(default_factory=dict)
    # make-before-break: the plan's override per surged workload (cluster -> replicas), the
    # capacity budget surges reserve from, and the headroom they leave in each destination
    surges: dict[str, dict[str, int]] = field(default_factory=dict)
    # the plan's bridge per bridged workload (cluster -> replicas; tidal.engine.bridging)
    bridges: dict[str, dict[str, int]] = field(default_factory=dict)
    budget: SurgeBudget = field(default_factory=OwnBudget)
    headroom_percent: float = 0.0
    # the daemon's shared informers (bindings, clusters); a run alone lists and watches itself
    reads: SharedReads | None = None
    # policy key -> its resourceSelectors as in force after the window
    selectors: dict[str, Any] = field(default_factory=dict)

    def binding_watch(self, namespace: str | None, cluster_scoped: bool,
                      keys: Collection[str] | None = None) -> BindingWatch:
        """A watch of the namespace's bindings; with `keys`, caching those only."""
        if self.reads is not None:
            return self.reads.binding_watch(namespace, cluster_scoped=cluster_scoped, keys=keys)
        return BindingWatch(self.client, namespace, cluster_scoped=cluster_scoped, keys=keys)

    def list_clusters(self) -> list[Obj]:
        return self.reads.list_clusters() if self.reads is not None else \
            list_clusters(self.client)

    def clusters_version(self) -> str | None:
        """The shared Cluster cache's resourceVersion (None: a run alone has no cache)."""
        return self.reads.clusters_version() if self.reads is not None else None

    def list_bindings(self, namespace: str | None, cluster_scoped: bool) -> list[Obj]:
        if self.reads is not None:
            return self.reads.list_bindings(namespace, cluster_scoped=cluster_scoped)
        return list_bindings(self.client, namespace, cluster_scoped=cluster_scoped)[0]

    @property
    def trigger(self) -> Trigger:
        return self.strategy.trigger

    @property
    def schedule(self) -> str:
        return self.state.schedule

    @property
    def window(self) -> str:
        return self.state.window

    @property
    def run_id(self) -> str:
        return self.state.run_id

    def event_base(self, wave: int | None) -> EventBase:
        return EventBase(schedule=self.schedule, window=self.window, run_id=self.run_id,
                         wave=wave)

    def now_iso(self) -> str:
        return iso_now(self.clock)


def _namespace_of(workloads: Sequence[Workload]) -> tuple[str | None, bool]:
    namespaces = {w.key.namespace for w in workloads}
    if namespaces == {""}:
        return None, True
    if len(namespaces) == 1:
        return next(iter(namespaces)), False
    return None, False


def _template_gone(ctx: SwitchContext, w: Workload) -> bool:
    return _missing(ctx, w.key.api_version, w.key)


def _missing(ctx: SwitchContext, api_version: str, key: WorkloadKey) -> bool:
    try:
        res = ctx.client.resource_for(api_version, key.kind)
        ctx.client.request("get", res, "GET", res.path(key.namespace or None, key.name))
    except NotFound:
        return True
    return False


def gone_reason(ctx: SwitchContext, name: str, api_versions: Mapping[str, str]) -> str:
    """Why a journalled workload is not in a resumed run's selection: `deleted`, or
    `not_selected` when its template is still there (its labels changed meanwhile);
    `api_versions`: kind -> apiVersion, from the templates still selected."""
    key = WorkloadKey.parse(name)
    api_version = api_versions.get(key.kind)
    if api_version is None or _missing(ctx, api_version, key):
        return "deleted"  # (no template of its kind is left to learn its API version from)
    return "not_selected"


def run_wave(ctx: SwitchContext, wave: WaveState, workloads: Sequence[Workload], *,
             placements: Mapping[str, object],
             direction: Direction = Direction.FORWARD,
             destinations: Collection[str] = ()) -> WaveOutcome:
    """Trigger the wave's workloads with the run's strategy and gate them. `placements`:
    policy key -> normalized target placement (what a touched binding must carry);
    `destinations`: the clusters it moves replicas into, which must stay Ready to its end
    (tidal.engine.destinations)."""
    live = [w for w in workloads if w.name not in ctx.skipped]
    ctx.emitter.emit(WaveStarted(**ctx.event_base(wave.index),
                                 workloads=tuple(w.name for w in live),
                                 trigger=ctx.trigger, rollback=direction is Direction.BACK))
    namespace, cluster_scoped = _namespace_of(ctx.everyone or live)
    # every binding the wave reads (its gates, floors, surges, bridges, rebalances): the
    # run's workloads and the wave's; the watch keeps and wakes for nothing else
    keys = {w.binding_key for w in ctx.everyone or live} | {w.binding_key for w in live}
    watch = ctx.binding_watch(namespace, cluster_scoped, keys=keys)
    watch.start()
    run = WaveRun(ctx, wave, live, placements, watch, direction,
                  DestinationHealth(ctx, wave.index, destinations))
    outcome = ctx.strategy.arm(run)
    if outcome is not None and not outcome.ok:
        return outcome
    outcome = run.gate(until=Gate.CONVERGED)
    if not outcome.ok:
        return outcome
    down = run.health.check(now=True)  # before the surge is released
    if down is not None:
        return down
    settled = ctx.strategy.settle(run)
    if settled is not None and not settled.ok:
        return settled
    return run.health.check(now=True) or outcome  # and before `succeeded`


class WaveRun:
    """One wave in flight: the primitives a trigger strategy arms it with (touch, rebalance,
    wait for a gate), sharing one watch, one deadline and the wave's targets."""

    def __init__(self, ctx: SwitchContext, wave: WaveState, live: Sequence[Workload],
                 placements: Mapping[str, object], watch: BindingWatch,
                 direction: Direction, health: DestinationHealth | None = None) -> None:
        self.ctx, self.wave, self.watch, self.direction = ctx, wave, watch, direction
        self.health = health or DestinationHealth(ctx, wave.index, ())
        self.live = list(live)
        self.placements = placements
        self.targets = {w.name: gates.WaveTarget(w, rule=ctx.strategy) for w in live}
        self.deadline = ctx.clock.monotonic() + ctx.wave_timeout
        self.passed: set[Gate] = set()  # gates announced in this wave (each once)

    @property
    def triggered_before(self) -> list[str]:
        """Workloads whose trigger this wave already wrote in its direction (a resume)."""
        w = self.wave
        return w.rollback_triggered if self.direction is Direction.BACK else w.triggered

    def touch(self) -> None:
        """Annotate every template of the wave (those touched before a crash are skipped);
        the deadline starts when the touches are written."""
        ctx = self.ctx
        for w in self.live:
            self.targets[w.name].placement = self.placements.get(w.policy)
        ctx.save()
        done = self.triggered_before
        touched = triggers.touch_wave(ctx.client, self.live, stamp=ctx.now_iso(),
                                      run_id=ctx.run_id, skip=done)
        for name in touched.deleted:
            self.leave_out(name, "deleted")
        for name in self.unmatched(touched):
            self.leave_out(name, "unmatched")
        done[:] = sorted(set(done) | set(touched.touched))
        ctx.save()
        self.deadline = ctx.clock.monotonic() + ctx.wave_timeout

    def leave_out(self, name: str, reason: str) -> None:
        leave_out(self.ctx, self.wave.index, name, reason, self.targets)

    def unmatched(self, touched: triggers.TouchResult) -> list[str]:
        """Templates the touch found relabelled out of their policy's resourceSelectors since
        the plan (forward; a rollback restores other selectors): Karmada will not move them."""
        if self.direction is Direction.BACK:
            return []
        policy = {w.name: w.policy for w in self.live}
        return sorted(name for name, obj in touched.objects.items()
                      if policy.get(name) in self.ctx.selectors
                      and not selected_by(obj, self.ctx.selectors[policy[name]]))

    def rebalance(self) -> WaveOutcome | None:
        return rebalancing.rebalance(self)

    def gate(self, until: Gate) -> WaveOutcome:
        return _gate(self.ctx, self.wave, self.targets, self.watch, self.deadline, until,
                     passed=self.passed, health=self.health)

    def scheduled(self) -> WaveOutcome:
        return self.gate(until=Gate.SCHEDULED)

    def reserve(self) -> WaveOutcome | None:
        return room.reserve_wave(self, (bridging.record_for(self), surging.record_for(self)))

    def bridge(self) -> WaveOutcome | None:
        return bridging.bridge(self)

    def release_bridge(self) -> WaveOutcome | None:
        return bridging.release(self)

    def surge(self) -> WaveOutcome | None:
        return surging.surge(self)

    def fit(self) -> None:
        surging.fit(self)

    def release(self) -> WaveOutcome | None:
        return surging.release(self)


def leave_out(ctx: SwitchContext, index: int, name: str, reason: str,
              targets: dict[str, gates.WaveTarget] | None = None) -> None:
    """Leave a workload of wave `index` out of the run, with a warning and an event."""
    ctx.skipped.add(name)
    if targets is not None:
        targets.pop(name, None)
    ctx.everyone = [w for w in ctx.everyone if w.name != name]
    what = "template deleted" if reason == "deleted" else reason.replace("_", " ")
    note = f"{name} left out: {what} during the switch"
    if note not in ctx.state.warnings:
        ctx.state.warnings.append(note)
    ctx.emitter.emit(WorkloadSkipped(**ctx.event_base(index), workload=name,
                                     reason=reason))


def _rebalancer_failures(ctx: SwitchContext, wave: WaveState) -> list[tuple[str, str]]:
    """(workload, reason) of every Failed entry of the wave's rebalancers."""
    out: list[tuple[str, str]] = []
    for name in wave.rebalancers[-1:]:
        try:
            obj = rebalancers_api.get_rebalancer(ctx.client, name)
        except NotFound:
            continue
        for item in ObjectView(obj).status.get("observedWorkloads") or []:
            if item.get("result") == "Failed":
                ref = item.get("workload") or {}
                key = f"{ref.get('namespace', '')}/{ref.get('kind')}/{ref.get('name')}"
                out.append((key, str(item.get("reason") or "Failed")))
    return out


def _gate(ctx: SwitchContext, wave: WaveState, targets: dict[str, gates.WaveTarget],
          watch: BindingWatch, deadline: float, until: Gate = Gate.CONVERGED, *,
          passed: set[Gate] | None = None,
          health: DestinationHealth | None = None) -> WaveOutcome:
    """Until every target passed `until`; `passed`: the gates this wave announced already
    (each gate_passed event once per wave)."""
    index = wave.index
    base = ctx.event_base(index)
    passed = set() if passed is None else passed
    clusters = floor_clusters(ctx.floors)
    last_check = ctx.clock.monotonic()
    tracker = _tracker(ctx, targets, watch)
    while True:
        lift_rescaled(ctx, wave, watch.cache)  # a surge follows the user's scale
        down = health.check() if health is not None else None
        if down is not None:
            return down
        report = tracker.report()
        _observe_floors(ctx, index, watch.cache, clusters)
        for gate in gates.GATES:
            if gate in report.passed and gate not in passed and gate is not Gate.FLOORS:
                passed.add(gate)
                ctx.emitter.emit(GatePassed(**base, gate=gate))
        if report.failure is FailureReason.FLOOR_BREACH:
            for v in report.violations:
                ctx.emitter.emit(FloorBreached(**base, cluster=v.cluster,
                                               workload=v.workload, ready=v.ready,
                                               required=v.required, floor=v.floor))
            return WaveOutcome(False, FailureReason.FLOOR_BREACH, report.reason)
        if report.failure:
            return WaveOutcome(False, report.failure, report.reason)
        if report.missing:
            for name in report.missing:
                w = targets[name].workload
                if not _template_gone(ctx, w):
                    return WaveOutcome(False, FailureReason.BINDING_NOT_FOUND,
                                       f"{name}: ReferencedBindingNotFound")
                leave_out(ctx, index, name, "deleted", targets)
            tracker = _tracker(ctx, targets, watch)
            continue
        if until in report.passed:
            if until is Gate.CONVERGED:
                ctx.emitter.emit(GatePassed(**base, gate=Gate.FLOORS))
            return WaveOutcome(True)
        now = ctx.clock.monotonic()
        if wave.rebalancers and Gate.TRIGGERED not in report.passed and \
                now - last_check >= REBALANCER_CHECK_SECONDS:
            last_check = now
            gone = False
            for name, reason in _rebalancer_failures(ctx, wave):
                if name in targets:
                    if not _template_gone(ctx, targets[name].workload):
                        return WaveOutcome(False, FailureReason.BINDING_NOT_FOUND,
                                           f"{name}: {reason}")
                    leave_out(ctx, index, name, "deleted", targets)
                    gone = True
            if gone:
                tracker = _tracker(ctx, targets, watch)
                continue
        remaining = deadline - now
        if remaining <= 0:
            return WaveOutcome(False, FailureReason.TIMEOUT,
                               _timeout_reason(ctx, report, len(targets), tracker))
        ctx.emitter.emit(WaveProgress(**base, ready=report.ready,
                                      assigned=report.assigned, converged=report.converged,
                                      total=len(targets)))
        for obj, deleted in watch.changes(min(remaining, 5.0)):
            tracker.update(key_of(obj), None if deleted else obj)
            probe = tracker.report()
            if probe.failure or probe.missing or until in probe.passed or \
                    probe.passed - passed - {Gate.FLOORS}:
                break
            if ctx.clock.monotonic() >= deadline:
                break


def _tracker(ctx: SwitchContext, targets: dict[str, gates.WaveTarget],
             watch: BindingWatch) -> gates.GateTracker:
    return gates.GateTracker(list(targets.values()), ctx.everyone, ctx.floors, ctx.before,
                             ctx.ready_field).load(watch.cache)


def _timeout_reason(ctx: SwitchContext, report: gates.GateReport, total: int,
                    tracker: gates.GateTracker) -> str:
    stuck = next((g for g in (Gate.TRIGGERED, Gate.SCHEDULED) if g not in report.passed),
                 Gate.CONVERGED)
    parts = [f"not {stuck} within waveTimeout {ctx.wave_timeout:g}s: {report.converged}/{total} "
             f"workloads converged; ready {report.ready}, assigned {report.assigned}"]
    short = [s for s in tracker.shortfalls() if s[1]]
    if stuck is Gate.CONVERGED and short:
        parts.append(stall.describe_shortfalls(short))
        waiting = sorted({c for _, clusters in short for c in clusters})
        requests = [w.workload.request for w in tracker.targets.values()]
        try:
            cause = stall.likely_cause(waiting, ctx.list_clusters(), requests)
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


