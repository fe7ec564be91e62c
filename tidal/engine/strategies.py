"""Trigger strategies: how a wave is set in motion and when a binding counts as triggered.

One class per resolved trigger behind `TriggerStrategy`, chosen once per run
(`strategy_for`). A strategy answers three questions:

- `needs_move`: does a workload still need this window's change (planning)?
- `arm`: set one wave in motion, using the steps of `WaveSteps` (touch the templates,
  create a WorkloadRebalancer, wait for a gate); the wave then waits for convergence;
- `triggered`: when does a binding count as triggered (the first gate)?

`settle` runs after the wave converged (nothing for these three; a make-before-break
strategy releases its surge there). A new strategy is one more class and one more entry in
`STRATEGIES`.
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


class TriggerStrategy(Protocol):
    trigger: ClassVar[Trigger]
    marks_lazy: ClassVar[bool]  # policies get a temporary Lazy so that waves pace activation
    fresh: ClassVar[bool]  # the scheduler reschedules from scratch (prediction)

    def needs_move(self, placement_now: object, target_placement: object,
                   policies_done: bool) -> bool: ...

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

    def needs_move(self, placement_now: object, target_placement: object,
                   policies_done: bool) -> bool:
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

    def needs_move(self, placement_now: object, target_placement: object,
                   policies_done: bool) -> bool:
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

    def needs_move(self, placement_now: object, target_placement: object,
                   policies_done: bool) -> bool:
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


STRATEGIES: Final[dict[Trigger, TriggerStrategy]] = {
    Trigger.TOUCH: Touch(),
    Trigger.REBALANCE: Rebalance(),
    Trigger.BOTH: Both(),
}


def strategy_for(trigger: Trigger | str) -> TriggerStrategy:
    """The strategy of a resolved trigger (journals store its value)."""
    return STRATEGIES[Trigger(trigger)]
