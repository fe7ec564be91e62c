"""The gate steps of a wave (scheduled, converged): each pass reads the gates off the watch's
bindings, announces each gate once per wave, watches the floors, and answers Done when every
workload of the wave passed the gate, Failed on a floor breach, an unschedulable binding or the
step's deadline, and otherwise Pending until a binding change that matters (the runner waits).
A workload whose binding vanishes with its template is left out of the run."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tidal.domain.floors import floor_clusters
from tidal.domain.waves import WorkloadKey
from tidal.engine import gates, samples, stall
from tidal.engine.events import FloorObserved, GatePassed, WaveProgress
from tidal.engine.inflight import SwitchContext, WaveInFlight, leave_out, report_breaches
from tidal.engine.journal import WaveState
from tidal.engine.states import FailureReason, Gate
from tidal.engine.steps import DONE, Answer, Failed, Pending, StepKind, WakeOn
from tidal.engine.surge_follow import follow_scale
from tidal.karmada import rebalancers as rebalancers_api
from tidal.karmada.client import Obj
from tidal.karmada.errors import KarmadaError, NotFound
from tidal.karmada.views import ObjectView

REBALANCER_CHECK_SECONDS = 1.0


def missing(ctx: SwitchContext, api_version: str, key: WorkloadKey) -> bool:
    """The template is gone (a GET answers NotFound)."""
    try:
        res = ctx.client.resource_for(api_version, key.kind)
        ctx.client.request("get", res, "GET", res.path(key.namespace or None, key.name))
    except NotFound:
        return True
    return False


class Gating:
    """A gate step: every workload of the wave passes `until`."""

    def __init__(self, until: Gate) -> None:
        self.until = until
        self.kind = StepKind.GATE_CONVERGED if until is Gate.CONVERGED else StepKind.GATE_SCHEDULED
        self._tracker: gates.GateTracker | None = None
        self._last_check = 0.0

    def done_in(self, run: WaveInFlight) -> bool:
        return False  # a gate is looked at again: it costs no write

    def advance(self, run: WaveInFlight) -> Answer:
        if self._tracker is None:
            self._tracker = _tracker(run)
            self._last_check = run.ctx.clock.monotonic()
        while True:
            answer = self._pass(run, self._tracker)
            if answer is not None:
                return answer
            self._tracker = _tracker(run)  # a workload left the wave: read it again

    def _pass(self, run: WaveInFlight, tracker: gates.GateTracker) -> Answer | None:
        """One look at the gates; None when a workload left the wave."""
        ctx = run.ctx
        follow_scale(ctx, run.watch.cache)  # a surge follows the user's scale
        down = run.health.check()
        if down is not None:
            return Failed.of(down)
        report = tracker.report()
        _observe_floors(run)
        _announce(run, report)
        failed = _failed(run, report)
        if failed is not None:
            return failed
        if report.missing:
            return _drop_missing(run, report.missing)
        if self.until in report.passed:
            if self.until is Gate.CONVERGED:
                ctx.emitter.emit(GatePassed(**ctx.event_base(run.wave.index), gate=Gate.FLOORS))
            _progress(run, report)
            _sample(ctx, run.wave, run.watch.cache, force=True)
            return DONE
        now = ctx.clock.monotonic()
        if self._rebalancers_due(run, report, now):
            self._last_check = now
            dropped = _rebalancer_failures(run)
            if isinstance(dropped, Failed):
                return dropped
            if dropped:
                return None
        if run.deadline - now <= 0:
            why = _timeout_reason(ctx, report, len(run.targets), tracker)
            return Failed(FailureReason.TIMEOUT, why)
        _progress(run, report)
        _sample(ctx, run.wave, run.watch.cache)
        return Pending(WakeOn(seen=tracker.update, when=self._woken(run, tracker)), run.deadline)

    def _rebalancers_due(self, run: WaveInFlight, report: gates.GateReport, now: float) -> bool:
        """Time to ask the wave's rebalancer whether it failed a workload (until triggered)."""
        return (
            bool(run.wave.rebalancers)
            and Gate.TRIGGERED not in report.passed
            and now - self._last_check >= REBALANCER_CHECK_SECONDS
        )

    def _woken(self, run: WaveInFlight, tracker: gates.GateTracker) -> Callable[[], bool]:
        def woken() -> bool:
            probe = tracker.report()
            return bool(
                probe.failure
                or probe.missing
                or self.until in probe.passed
                or probe.passed - run.passed - {Gate.FLOORS}
            )

        return woken


def _announce(run: WaveInFlight, report: gates.GateReport) -> None:
    """Each gate passed, once per wave (floors: when the wave converged)."""
    base = run.ctx.event_base(run.wave.index)
    for gate in gates.GATES:
        if gate in report.passed and gate not in run.passed and gate is not Gate.FLOORS:
            run.passed.add(gate)
            run.ctx.emitter.emit(GatePassed(**base, gate=gate))


def _failed(run: WaveInFlight, report: gates.GateReport) -> Failed | None:
    if report.failure is FailureReason.FLOOR_BREACH:
        report_breaches(run.ctx, run.wave.index, report.violations)
    if report.failure:
        return Failed(report.failure, report.reason)
    return None


def _drop_missing(run: WaveInFlight, names: Sequence[str]) -> Failed | None:
    """Workloads whose binding vanished: left out if their template went too, else failed."""
    for name in names:
        w = run.targets[name].workload
        if not missing(run.ctx, w.key.api_version, w.key):
            return Failed(FailureReason.BINDING_NOT_FOUND, f"{name}: ReferencedBindingNotFound")
        leave_out(run.ctx, run.wave.index, name, "deleted", run.targets)
    return None


def _rebalancer_failures(run: WaveInFlight) -> Failed | bool:
    """A Failed entry of the wave's rebalancer fails the wave unless the workload's template
    is gone (then it is left out); whether a workload was left out."""
    gone = False
    for name, reason in _rebalancer_failed_entries(run.ctx, run.wave):
        if name not in run.targets:
            continue
        w = run.targets[name].workload
        if not missing(run.ctx, w.key.api_version, w.key):
            return Failed(FailureReason.BINDING_NOT_FOUND, f"{name}: {reason}")
        leave_out(run.ctx, run.wave.index, name, "deleted", run.targets)
        gone = True
    return gone


def _rebalancer_failed_entries(ctx: SwitchContext, wave: WaveState) -> list[tuple[str, str]]:
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


def _progress(run: WaveInFlight, report: gates.GateReport) -> None:
    run.ctx.emitter.emit(
        WaveProgress(
            **run.ctx.event_base(run.wave.index),
            ready=report.ready,
            assigned=report.assigned,
            converged=report.converged,
            total=len(run.targets),
        )
    )


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


def _tracker(run: WaveInFlight) -> gates.GateTracker:
    ctx = run.ctx
    return gates.GateTracker(
        list(run.targets.values()),
        ctx.everyone,
        ctx.floors,
        ctx.before,
        ctx.ready_field,
        ctx.memo,
        ctx.recovering,
    ).load(run.watch.cache)


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


def _observe_floors(run: WaveInFlight) -> None:
    ctx, cache = run.ctx, run.watch.cache
    clusters = floor_clusters(ctx.floors)
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
                    **ctx.event_base(run.wave.index),
                    cluster=cluster,
                    min_ready=value,
                    required=required[cluster],
                )
            )
