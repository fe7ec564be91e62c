"""Run one wave: trigger it, then watch the bindings until every gate passes, a gate fails,
a floor breaks, or waveTimeout runs out. Used for forward waves and for rollback waves."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from tidal.domain.floors import floor_clusters
from tidal.domain.waves import WorkloadKey
from tidal.engine import bridging, gates, rebalancing, room, samples, stall, surging, triggers
from tidal.engine.destinations import DestinationHealth
from tidal.engine.events import (
    FloorBreached,
    FloorObserved,
    GatePassed,
    WaveProgress,
    WaveStarted,
)
from tidal.engine.inflight import SwitchContext, WaveInFlight, leave_out
from tidal.engine.journal import WaveState
from tidal.engine.outcome import WaveOutcome
from tidal.engine.resolve import Workload
from tidal.engine.states import Direction, FailureReason, Gate
from tidal.engine.surge_follow import lift_rescaled
from tidal.karmada import rebalancers as rebalancers_api
from tidal.karmada.bindings import BindingWatch, key_of
from tidal.karmada.client import Obj
from tidal.karmada.errors import KarmadaError, NotFound
from tidal.karmada.views import ObjectView

REBALANCER_CHECK_SECONDS = 1.0


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


def run_wave(
    ctx: SwitchContext,
    wave: WaveState,
    workloads: Sequence[Workload],
    *,
    placements: Mapping[str, object],
    direction: Direction = Direction.FORWARD,
    destinations: Collection[str] = (),
) -> WaveOutcome:
    """Trigger the wave's workloads with the run's strategy and gate them. `placements`:
    policy key -> normalized target placement (what a touched binding must carry);
    `destinations`: the clusters it moves replicas into, which must stay Ready to its end
    (tidal.engine.destinations)."""
    live = [w for w in workloads if w.name not in ctx.skipped]
    ctx.emitter.emit(
        WaveStarted(
            **ctx.event_base(wave.index),
            workloads=tuple(w.name for w in live),
            trigger=ctx.trigger,
            rollback=direction is Direction.BACK,
        )
    )
    namespace, cluster_scoped = _namespace_of(ctx.everyone or live)
    # every binding the wave reads (its gates, floors, surges, bridges, rebalances): the
    # run's workloads and the wave's; the watch keeps and wakes for nothing else
    keys = {w.binding_key for w in ctx.everyone or live} | {w.binding_key for w in live}
    watch = ctx.binding_watch(namespace, cluster_scoped, keys=keys)
    watch.start()
    run = WaveRun(
        ctx,
        wave,
        live,
        placements,
        watch,
        direction,
        DestinationHealth(ctx, wave.index, destinations),
    )
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


class WaveRun(WaveInFlight):
    """One wave in flight: the primitives a trigger strategy arms it with (touch, rebalance,
    wait for a gate, and the bridge, surge and room steps)."""

    def touch(self) -> None:
        """Annotate every template of the wave (those touched before a crash are skipped);
        the deadline starts when the touches are written."""
        ctx = self.ctx
        for w in self.live:
            self.targets[w.name].placement = self.placements.get(w.policy)
        ctx.save()
        done = self.triggered_before
        touched = triggers.touch_wave(
            ctx.client, self.live, stamp=ctx.now_iso(), run_id=ctx.run_id, skip=done
        )
        for name in touched.deleted:
            self.leave_out(name, "deleted")
        for name in self.unmatched(touched):
            self.leave_out(name, "unmatched")
        done[:] = sorted(set(done) | set(touched.touched))
        ctx.save()
        self.deadline = ctx.clock.monotonic() + ctx.wave_timeout

    def rebalance(self) -> WaveOutcome | None:
        return rebalancing.rebalance(self)

    def gate(self, until: Gate) -> WaveOutcome:
        return _gate(
            self.ctx,
            self.wave,
            self.targets,
            self.watch,
            self.deadline,
            until,
            passed=self.passed,
            health=self.health,
        )

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


def _gate(
    ctx: SwitchContext,
    wave: WaveState,
    targets: dict[str, gates.WaveTarget],
    watch: BindingWatch,
    deadline: float,
    until: Gate = Gate.CONVERGED,
    *,
    passed: set[Gate] | None = None,
    health: DestinationHealth | None = None,
) -> WaveOutcome:
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
                ctx.emitter.emit(
                    FloorBreached(
                        **base,
                        cluster=v.cluster,
                        workload=v.workload,
                        ready=v.ready,
                        required=v.required,
                        floor=v.floor,
                    )
                )
            return WaveOutcome(False, FailureReason.FLOOR_BREACH, report.reason)
        if report.failure:
            return WaveOutcome(False, report.failure, report.reason)
        if report.missing:
            for name in report.missing:
                w = targets[name].workload
                if not _template_gone(ctx, w):
                    return WaveOutcome(
                        False, FailureReason.BINDING_NOT_FOUND, f"{name}: ReferencedBindingNotFound"
                    )
                leave_out(ctx, index, name, "deleted", targets)
            tracker = _tracker(ctx, targets, watch)
            continue
        if until in report.passed:
            if until is Gate.CONVERGED:
                ctx.emitter.emit(GatePassed(**base, gate=Gate.FLOORS))
            ctx.emitter.emit(
                WaveProgress(
                    **base,
                    ready=report.ready,
                    assigned=report.assigned,
                    converged=report.converged,
                    total=len(targets),
                )
            )
            _sample(ctx, wave, watch.cache, force=True)
            return WaveOutcome(True)
        now = ctx.clock.monotonic()
        if (
            wave.rebalancers
            and Gate.TRIGGERED not in report.passed
            and now - last_check >= REBALANCER_CHECK_SECONDS
        ):
            last_check = now
            gone = False
            for name, reason in _rebalancer_failures(ctx, wave):
                if name in targets:
                    if not _template_gone(ctx, targets[name].workload):
                        return WaveOutcome(
                            False, FailureReason.BINDING_NOT_FOUND, f"{name}: {reason}"
                        )
                    leave_out(ctx, index, name, "deleted", targets)
                    gone = True
            if gone:
                tracker = _tracker(ctx, targets, watch)
                continue
        remaining = deadline - now
        if remaining <= 0:
            return WaveOutcome(
                False, FailureReason.TIMEOUT, _timeout_reason(ctx, report, len(targets), tracker)
            )
        ctx.emitter.emit(
            WaveProgress(
                **base,
                ready=report.ready,
                assigned=report.assigned,
                converged=report.converged,
                total=len(targets),
            )
        )
        _sample(ctx, wave, watch.cache)
        for obj, deleted in watch.changes(min(remaining, 5.0)):
            tracker.update(key_of(obj), None if deleted else obj)
            probe = tracker.report()
            if (
                probe.failure
                or probe.missing
                or until in probe.passed
                or probe.passed - passed - {Gate.FLOORS}
            ):
                break
            if ctx.clock.monotonic() >= deadline:
                break


def _sample(
    ctx: SwitchContext, wave: WaveState, cache: dict[str, Obj], force: bool = False
) -> None:
    """The run's replicas per cluster now, into the wave's record (saved with it)."""
    if not ctx.sampler.due(wave.index, ctx.clock.monotonic(), force):
        return
    ready, desired = samples.totals(ctx.everyone, cache, ctx.ready_field)
    samples.keep(
        wave.samples,
        {
            "t": samples.seconds_since(ctx.state.started_at, ctx.clock.now()),
            "ready": ready,
            "desired": desired,
            "lowest": dict(sorted(ctx.floor_seen.items())),
        },
        samples.limit(len(ctx.state.waves)),
    )


def _tracker(
    ctx: SwitchContext, targets: dict[str, gates.WaveTarget], watch: BindingWatch
) -> gates.GateTracker:
    return gates.GateTracker(
        list(targets.values()), ctx.everyone, ctx.floors, ctx.before, ctx.ready_field, ctx.memo
    ).load(watch.cache)


def _timeout_reason(
    ctx: SwitchContext, report: gates.GateReport, total: int, tracker: gates.GateTracker
) -> str:
    stuck = next(
        (g for g in (Gate.TRIGGERED, Gate.SCHEDULED) if g not in report.passed), Gate.CONVERGED
    )
    parts = [
        f"not {stuck} within waveTimeout {ctx.wave_timeout:g}s: {report.converged}/{total} "
        f"workloads converged; ready {report.ready}, assigned {report.assigned}"
    ]
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


def _observe_floors(
    ctx: SwitchContext, index: int, cache: dict[str, Obj], clusters: Sequence[str]
) -> None:
    if not clusters:
        return
    lowest = gates.lowest_ready(ctx.everyone, cache, clusters, ctx.ready_field, ctx.memo)
    required = {
        c: max((f.min_ready_replicas or 0) for f in ctx.floors if c in f.named_clusters())
        for c in clusters
    }
    for cluster, value in lowest.items():
        if ctx.floor_seen.get(cluster) != value:
            ctx.floor_seen[cluster] = value
            ctx.emitter.emit(
                FloorObserved(
                    **ctx.event_base(index),
                    cluster=cluster,
                    min_ready=value,
                    required=required[cluster],
                )
            )
