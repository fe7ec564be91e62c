"""The steps of a wave, one small class per kind (tidal.engine.steps.StepKind), each over the
module that does the work (room, bridging, surging, rebalancing, gating). `build` turns a
strategy's list of kinds (tidal.engine.strategies) into the steps the runner advances."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from tidal.engine import bridging, pacing, rebalancing, room, surging, triggers
from tidal.engine.gating import Gating
from tidal.engine.inflight import WaveInFlight
from tidal.engine.journal import BridgeRecord, SurgeRecord
from tidal.engine.runner import Step
from tidal.engine.states import BridgeStep, Gate, SurgeStep
from tidal.engine.steps import DONE, Answer, Pending, StepKind, answer

MOVED: Final = (
    SurgeStep.MOVING,
    SurgeStep.PARKED,
    SurgeStep.RELEASING,
    SurgeStep.RELEASED,
    SurgeStep.KEPT,
)


class _AdvancedAgainOnResume:
    """A step whose finish the journals from before step indexes cannot show: a resume
    advances it again (each of them is safe to repeat)."""

    def done_in(self, run: WaveInFlight) -> bool:
        return False


class ReserveRoom:
    """Lease the room of the wave's bridge and surge, as one hold (tidal.engine.room); pending
    on a Cluster status change while it does not fit."""

    kind = StepKind.RESERVE_ROOM

    def advance(self, run: WaveInFlight) -> Answer:
        records = (bridging.record_for(run), surging.record_for(run))
        held = room.reserve_wave(run, records)
        return held if isinstance(held, Pending) else answer(held)

    def done_in(self, run: WaveInFlight) -> bool:
        return any(
            r is not None and r.step not in (BridgeStep.NONE, SurgeStep.NONE)
            for r in (run.leg.bridge, run.leg.surge)
        )


class Bridge:
    """A bridge for the workloads whose destination has no member Work (tidal.engine.bridging)."""

    kind = StepKind.BRIDGE

    def __init__(self) -> None:
        self._started = False
        self._record: BridgeRecord | None = None
        self._wait: surging.ReadyWait | None = None

    def advance(self, run: WaveInFlight) -> Answer:
        if not self._started:
            self._started = True
            started = bridging.start(run)
            if started is None:
                return DONE
            self._record, self._wait = started
        if self._record is None:
            return DONE
        if self._wait is not None:
            ready = self._wait.check()
            if ready is not DONE:
                return ready
        bridging.finish(run, self._record)
        return DONE

    def done_in(self, run: WaveInFlight) -> bool:
        bridge, surge = run.leg.bridge, run.leg.surge
        if bridge is not None:
            return bridge.step in (BridgeStep.RESTORED, BridgeStep.RELEASED)
        return surge is not None and surge.step is not SurgeStep.NONE  # (it comes after)


class Surge:
    """Overrides raise the destinations; done when those replicas are ready."""

    kind = StepKind.SURGE

    def __init__(self) -> None:
        self._started = False
        self._record: SurgeRecord | None = None
        self._wait: surging.ReadyWait | None = None

    def advance(self, run: WaveInFlight) -> Answer:
        if not self._started:
            self._started = True
            self._record = surging.start(run)
            if self._record is not None:
                self._wait = surging.surged(run, self._record)
                pacing.raise_ahead(run)  # the next waves' surges, while this one's start
        if self._record is None or self._wait is None:
            return DONE
        ready = self._wait.check()
        if ready is DONE:
            surging.moving(run, self._record)
        return ready

    def done_in(self, run: WaveInFlight) -> bool:
        surge = run.leg.surge
        return surge is not None and surge.step in MOVED


class TriggerTouch:
    """Annotate every template of the wave (those touched before a crash are skipped)."""

    kind = StepKind.TRIGGER_TOUCH

    def advance(self, run: WaveInFlight) -> Answer:
        ctx = run.ctx
        for w in run.live:
            run.targets[w.name].placement = run.placements.get(w.policy)
        ctx.save()
        done = run.triggered_before
        touched = triggers.touch_wave(
            ctx.client, run.live, stamp=ctx.now_iso(), run_id=ctx.run_id, skip=done
        )
        for name in touched.deleted:
            run.leave_out(name, "deleted")
        for name in run.unmatched(touched):
            run.leave_out(name, "unmatched")
        done[:] = sorted(set(done) | set(touched.touched))
        ctx.save()
        return DONE

    def done_in(self, run: WaveInFlight) -> bool:
        return {w.name for w in run.live} <= set(run.triggered_before)


class TriggerRebalance(_AdvancedAgainOnResume):
    """One WorkloadRebalancer for the wave (tidal.engine.rebalancing); on a resume, the
    rebalancers themselves tell what is done."""

    kind = StepKind.TRIGGER_REBALANCE

    def __init__(self) -> None:
        self._rebalancing: rebalancing.Rebalancing | None = None

    def advance(self, run: WaveInFlight) -> Answer:
        if self._rebalancing is None:
            self._rebalancing = rebalancing.Rebalancing(run)
        return self._rebalancing.advance()


class Fit(_AdvancedAgainOnResume):
    """Raise an override wherever the binding now assigns more than it sets."""

    kind = StepKind.FIT

    def advance(self, run: WaveInFlight) -> Answer:
        surging.fit(run)
        return DONE


class HealthCheck(_AdvancedAgainOnResume):
    """The wave's destination clusters are still Ready (a look now)."""

    kind = StepKind.HEALTH_CHECK

    def advance(self, run: WaveInFlight) -> Answer:
        return answer(run.health.check(now=True))


class ReleaseBridge(_AdvancedAgainOnResume):
    """Put the wave's bridge to rest (its room goes back with the surge's)."""

    kind = StepKind.RELEASE_BRIDGE

    def advance(self, run: WaveInFlight) -> Answer:
        bridging.release(run)
        return DONE


class ReleaseSurge(_AdvancedAgainOnResume):
    """Delete the wave's overrides once the new split is applied; give its room back."""

    kind = StepKind.RELEASE_SURGE

    def advance(self, run: WaveInFlight) -> Answer:
        return surging.release(run)


MAKERS: Final[dict[StepKind, Callable[[], Step]]] = {
    StepKind.RESERVE_ROOM: ReserveRoom,
    StepKind.BRIDGE: Bridge,
    StepKind.SURGE: Surge,
    StepKind.TRIGGER_TOUCH: TriggerTouch,
    StepKind.TRIGGER_REBALANCE: TriggerRebalance,
    StepKind.GATE_SCHEDULED: lambda: Gating(Gate.SCHEDULED),
    StepKind.FIT: Fit,
    StepKind.GATE_CONVERGED: lambda: Gating(Gate.CONVERGED),
    StepKind.HEALTH_CHECK: HealthCheck,
    StepKind.RELEASE_BRIDGE: ReleaseBridge,
    StepKind.RELEASE_SURGE: ReleaseSurge,
}


def build(kinds: Sequence[StepKind]) -> list[Step]:
    """The steps of a wave, fresh (each keeps what it saw in this process only)."""
    return [MAKERS[kind]() for kind in kinds]
