"""Trigger strategies: how a wave is set in motion and when a binding counts as triggered.

One class per resolved trigger behind `TriggerStrategy`, chosen once per run
(`strategy_for`). A strategy answers three questions:

- `needs_move`: does a workload still need this window's change (planning)?
- `arm`: set one wave in motion, using the steps of `WaveSteps` (touch the templates,
  create a WorkloadRebalancer, wait for a gate); the wave then waits for convergence;
- `triggered`: when does a binding count as triggered (the first gate)?

`settle` runs after the wave converged (nothing for these three). `MakeBeforeBreak` wraps each
of them for `strategy: surge` (`SURGING`): `arm` surges the destinations first, then triggers
the move as the inner strategy does; `settle` releases the surge. A new strategy is one more
class and one more entry in `STRATEGIES`.
"""

from __future__ import annotations

from typing import ClassVar, Final, Protocol

from tidal.engine.gates import WaveTarget, rebalance_triggered, touch_triggered
from tidal.engine.outcome import WaveOutcome
from tidal.engine.states import Gate, Trigger
from tidal.karmada.views import BindingView


class WaveSteps(Protocol):
    """What a strategy may do to a wave in flight (tidal.engine.wave.WaveRun)."""

    def touch(self) -> None:
        """Annotate every template of the wave (resumable); restarts the deadline."""
        ...

    def rebalance(self) -> WaveOutcome | None:
        """One WorkloadRebalancer for the wave (resumable); a failed outcome on an API error."""
        ...

    def gate(self, until: Gate) -> WaveOutcome:
        """Wait until every workload of the wave passed `until` (or a gate fails)."""
        ...

    def scheduled(self) -> WaveOutcome:
        """Wait until `scheduled` (each gate is announced once per wave)."""
        ...

    def reserve(self) -> WaveOutcome | None:
        """Lease the room of the wave's bridge and surge from the run's budget, as one hold
        (tidal.engine.room), waiting until it fits; a failed outcome at the wave's timeout."""
        ...

    def bridge(self) -> WaveOutcome | None:
        """Give each workload whose destination has no member Work one first (a Duplicated
        placement for a moment on its Lazy policy; tidal.engine.bridging), resumable; a
        failed outcome on a floor breach or timeout."""
        ...

    def release_bridge(self) -> WaveOutcome | None:
        """Put the bridge to rest (resumable); the room goes back with the surge's."""
        ...

    def surge(self) -> WaveOutcome | None:
        """Raise the destinations with overrides and wait until those replicas are ready
        (each step journalled and resumable); a failed outcome on a floor breach or timeout."""
        ...

    def fit(self) -> None:
        """After the move is scheduled: raise an override wherever the binding assigns more."""
        ...

    def release(self) -> WaveOutcome | None:
        """Delete the wave's overrides and give back its room (resumable)."""
        ...


class TriggerStrategy(Protocol):
    trigger: ClassVar[Trigger]
    marks_lazy: ClassVar[bool]  # policies get a temporary Lazy so that waves pace activation
    fresh: ClassVar[bool]  # the scheduler reschedules from scratch (prediction)

    def needs_move(
        self, placement_now: object, target_placement: object, policies_done: bool
    ) -> bool: ...

    def arm(self, wave: WaveSteps) -> WaveOutcome | None:
        """Set the wave in motion; a failed outcome ends the wave."""
        ...

    def triggered(self, target: WaveTarget, binding: BindingView) -> bool: ...

    def settle(self, wave: WaveSteps) -> WaveOutcome | None:
        """After convergence; a failed outcome fails the wave."""
        ...


class Touch:
    """A tidal.io/ annotation on each template: a Lazy policy activates for exactly it."""

    trigger: ClassVar[Trigger] = Trigger.TOUCH
    marks_lazy: ClassVar[bool] = True
    fresh: ClassVar[bool] = False

    def needs_move(
        self, placement_now: object, target_placement: object, policies_done: bool
    ) -> bool:
        return placement_now != target_placement

    def arm(self, wave: WaveSteps) -> WaveOutcome | None:
        wave.touch()
        return None

    def triggered(self, target: WaveTarget, binding: BindingView) -> bool:
        return touch_triggered(target, binding)

    def settle(self, wave: WaveSteps) -> WaveOutcome | None:
        return None


class Rebalance:
    """One WorkloadRebalancer per wave: a Fresh reschedule of exactly its workloads."""

    trigger: ClassVar[Trigger] = Trigger.REBALANCE
    marks_lazy: ClassVar[bool] = False
    fresh: ClassVar[bool] = True

    def needs_move(
        self, placement_now: object, target_placement: object, policies_done: bool
    ) -> bool:
        return not policies_done

    def arm(self, wave: WaveSteps) -> WaveOutcome | None:
        return wave.rebalance()

    def triggered(self, target: WaveTarget, binding: BindingView) -> bool:
        return rebalance_triggered(target, binding)

    def settle(self, wave: WaveSteps) -> WaveOutcome | None:
        return None


class Both:
    """Touch, wait until that (Steady) schedule is done, then rebalance: a Lazy policy must
    claim the binding before a rebalance can move it, and the rebalance must come after."""

    trigger: ClassVar[Trigger] = Trigger.BOTH
    marks_lazy: ClassVar[bool] = True
    fresh: ClassVar[bool] = True

    def needs_move(
        self, placement_now: object, target_placement: object, policies_done: bool
    ) -> bool:
        return placement_now != target_placement or not policies_done

    def arm(self, wave: WaveSteps) -> WaveOutcome | None:
        wave.touch()
        outcome = wave.gate(until=Gate.SCHEDULED)
        if not outcome.ok:
            return outcome
        return wave.rebalance()

    def triggered(self, target: WaveTarget, binding: BindingView) -> bool:
        return touch_triggered(target, binding) and rebalance_triggered(target, binding)

    def settle(self, wave: WaveSteps) -> WaveOutcome | None:
        return None


class MakeBeforeBreak:
    """Surge first: the wave's destinations are raised to their new share (overrides) and
    ready before the trigger of `inner` moves anything; once the move is scheduled the
    overrides are fitted to the new split, and after convergence they are released. Workloads
    whose destination has no member to raise are bridged first (trigger touch only)."""

    inner: ClassVar[TriggerStrategy]

    def arm(self, wave: WaveSteps) -> WaveOutcome | None:
        outcome = wave.reserve() or wave.bridge()
        if outcome is not None and not outcome.ok:
            return outcome
        outcome = wave.surge()
        if outcome is not None and not outcome.ok:
            return outcome
        outcome = self.inner.arm(wave)
        if outcome is not None and not outcome.ok:
            return outcome
        outcome = wave.scheduled()
        if not outcome.ok:
            return outcome
        wave.fit()
        return None

    def settle(self, wave: WaveSteps) -> WaveOutcome | None:
        return wave.release_bridge() or wave.release()


class SurgeTouch(MakeBeforeBreak, Touch):
    inner: ClassVar[TriggerStrategy] = Touch()


class SurgeRebalance(MakeBeforeBreak, Rebalance):
    inner: ClassVar[TriggerStrategy] = Rebalance()


class SurgeBoth(MakeBeforeBreak, Both):
    inner: ClassVar[TriggerStrategy] = Both()


STRATEGIES: Final[dict[Trigger, TriggerStrategy]] = {
    Trigger.TOUCH: Touch(),
    Trigger.REBALANCE: Rebalance(),
    Trigger.BOTH: Both(),
}
SURGING: Final[dict[Trigger, TriggerStrategy]] = {
    Trigger.TOUCH: SurgeTouch(),
    Trigger.REBALANCE: SurgeRebalance(),
    Trigger.BOTH: SurgeBoth(),
}


def strategy_for(trigger: Trigger | str, *, surge: bool = False) -> TriggerStrategy:
    """The strategy of a resolved trigger (journals store its value), made before broken
    with `surge` (the run's rollout strategy)."""
    return (SURGING if surge else STRATEGIES)[Trigger(trigger)]
