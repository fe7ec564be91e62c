"""Trigger strategies: how a wave is set in motion and when a binding counts as triggered.

One class per resolved trigger behind `TriggerStrategy`, chosen once per run
(`strategy_for`). A strategy answers three questions:

- `needs_move`: does a workload still need this window's change (planning)?
- `steps`: the wave's step list (tidal.engine.steps.StepKind), data the kernel runs
  (tidal.engine.wave_steps builds the steps, tidal.engine.runner advances them): the trigger's
  own steps (`arming`: touch the templates, create a WorkloadRebalancer, wait for a gate), then
  convergence;
- `triggered`: when does a binding count as triggered (the first gate)?

`MakeBeforeBreak` wraps each of them for `strategy: surge` (`SURGING`): room, bridge and surge
first, then the trigger's steps, the fit, convergence, then the bridge and surge released. A
new strategy is one more class (its `arming` or its own `steps`) and one more entry in
`STRATEGIES`; a new kind of step is one more row of tidal.engine.steps.STEPS and one more
class in tidal.engine.wave_steps.
"""

from __future__ import annotations

from typing import ClassVar, Final, Protocol

from tidal.domain.placement import Placement
from tidal.engine.gates import WaveTarget, rebalance_triggered, touch_triggered
from tidal.engine.states import Trigger
from tidal.engine.steps import StepKind
from tidal.engine.steps import StepKind as K
from tidal.karmada.views import BindingView


class TriggerStrategy(Protocol):
    trigger: ClassVar[Trigger]
    marks_lazy: ClassVar[bool]  # policies get a temporary Lazy so that waves pace activation
    fresh: ClassVar[bool]  # the scheduler reschedules from scratch (prediction)

    def needs_move(
        self,
        placement_now: Placement | None,
        target_placement: Placement | None,
        policies_done: bool,
    ) -> bool: ...

    def triggered(self, target: WaveTarget, binding: BindingView) -> bool: ...

    def steps(self) -> tuple[StepKind, ...]:
        """The wave's step list (tidal.engine.wave_steps builds them, tidal.engine.runner
        advances them)."""
        ...


class _Direct:
    """A trigger strategy as data: whether it touches the templates (then policies get a
    temporary Lazy: `marks_lazy`), whether it rebalances (a Fresh reschedule: `fresh`), and
    its own `arming` steps, followed by the gates (`direct`)."""

    trigger: ClassVar[Trigger]
    marks_lazy: ClassVar[bool]
    fresh: ClassVar[bool]
    arming: ClassVar[tuple[StepKind, ...]]

    def needs_move(
        self,
        placement_now: Placement | None,
        target_placement: Placement | None,
        policies_done: bool,
    ) -> bool:
        """A touch moves what does not carry the target placement yet; a rebalance moves
        everything until the window's policies are done."""
        return (self.marks_lazy and placement_now != target_placement) or (
            self.fresh and not policies_done
        )

    def triggered(self, target: WaveTarget, binding: BindingView) -> bool:
        return (not self.marks_lazy or touch_triggered(target, binding)) and (
            not self.fresh or rebalance_triggered(target, binding)
        )

    def steps(self) -> tuple[StepKind, ...]:
        return direct(self.arming)


class Touch(_Direct):
    """A tidal.io/ annotation on each template: a Lazy policy activates for exactly it."""

    trigger: ClassVar[Trigger] = Trigger.TOUCH
    marks_lazy: ClassVar[bool] = True
    fresh: ClassVar[bool] = False
    arming: ClassVar[tuple[StepKind, ...]] = (K.TRIGGER_TOUCH,)


class Rebalance(_Direct):
    """One WorkloadRebalancer per wave: a Fresh reschedule of exactly its workloads."""

    trigger: ClassVar[Trigger] = Trigger.REBALANCE
    marks_lazy: ClassVar[bool] = False
    fresh: ClassVar[bool] = True
    arming: ClassVar[tuple[StepKind, ...]] = (K.TRIGGER_REBALANCE,)


class Both(_Direct):
    """Touch, wait until that (Steady) schedule is done, then rebalance: a Lazy policy must
    claim the binding before a rebalance can move it, and the rebalance must come after."""

    trigger: ClassVar[Trigger] = Trigger.BOTH
    marks_lazy: ClassVar[bool] = True
    fresh: ClassVar[bool] = True
    arming: ClassVar[tuple[StepKind, ...]] = (
        K.TRIGGER_TOUCH,
        K.GATE_SCHEDULED,
        K.TRIGGER_REBALANCE,
    )


class MakeBeforeBreak:
    """Surge first: the wave's destinations are raised to their new share (overrides) and
    ready before the trigger of `inner` moves anything; once the move is scheduled the
    overrides are fitted to the new split, and after convergence they are released. Workloads
    whose destination has no member to raise are bridged first (trigger touch only)."""

    arming: ClassVar[tuple[StepKind, ...]]

    def steps(self) -> tuple[StepKind, ...]:
        return make_before_break(self.arming)


class SurgeTouch(MakeBeforeBreak, Touch):
    pass


class SurgeRebalance(MakeBeforeBreak, Rebalance):
    pass


class SurgeBoth(MakeBeforeBreak, Both):
    pass


def direct(arming: tuple[StepKind, ...]) -> tuple[StepKind, ...]:
    """A direct wave: its trigger's steps, then converged and a look at the destinations
    before and after its (empty) settling."""
    return (*arming, K.GATE_CONVERGED, K.HEALTH_CHECK, K.HEALTH_CHECK)


def make_before_break(arming: tuple[StepKind, ...]) -> tuple[StepKind, ...]:
    """A surging wave: room, bridge and surge first, then its trigger's steps; once the move
    is scheduled the overrides are fitted; after convergence (the destinations looked at) the
    bridge and the surge are released, and the destinations looked at again."""
    return (
        K.RESERVE_ROOM,
        K.BRIDGE,
        K.SURGE,
        *arming,
        K.GATE_SCHEDULED,
        K.FIT,
        K.GATE_CONVERGED,
        K.HEALTH_CHECK,
        K.RELEASE_BRIDGE,
        K.RELEASE_SURGE,
        K.HEALTH_CHECK,
    )


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
