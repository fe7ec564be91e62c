"""Trigger strategies: what each arms a wave with, what it counts as triggered, what it plans."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tidal.domain.placement import Placement
from tidal.domain.waves import WorkloadKey
from tidal.engine.gates import WaveTarget
from tidal.engine.resolve import Workload
from tidal.engine.states import Trigger
from tidal.engine.steps import STEPS, StepKind
from tidal.engine.strategies import Both, Rebalance, Touch, TriggerStrategy, strategy_for
from tidal.karmada.views import BindingView

CREATED = datetime(2026, 6, 1, 23, 0, tzinfo=UTC)
RAW_PLACEMENT = {"clusterAffinity": {"clusterNames": ["b"]}}
PLACEMENT = Placement(RAW_PLACEMENT)


K = StepKind
DIRECT_END = [K.GATE_CONVERGED, K.HEALTH_CHECK, K.HEALTH_CHECK]


@pytest.mark.parametrize(
    ("strategy", "arming"),
    [
        (Touch(), [K.TRIGGER_TOUCH]),
        (Rebalance(), [K.TRIGGER_REBALANCE]),
        (Both(), [K.TRIGGER_TOUCH, K.GATE_SCHEDULED, K.TRIGGER_REBALANCE]),
    ],
)
def test_each_strategy_is_a_step_list_with_its_own_trigger(
    strategy: TriggerStrategy, arming: list[StepKind]
) -> None:
    """touch annotates, rebalance creates a rebalancer, both touches, waits, then rebalances;
    each then waits for convergence and looks at its destinations before and after settling."""
    assert list(strategy.steps()) == [*arming, *DIRECT_END]


@pytest.mark.parametrize(
    ("trigger", "inner"),
    [
        (Trigger.TOUCH, [K.TRIGGER_TOUCH]),
        (Trigger.REBALANCE, [K.TRIGGER_REBALANCE]),
        (Trigger.BOTH, [K.TRIGGER_TOUCH, K.GATE_SCHEDULED, K.TRIGGER_REBALANCE]),
    ],
)
def test_a_surge_strategy_surges_before_its_trigger_and_releases_after(
    trigger: Trigger, inner: list[StepKind]
) -> None:
    """Make-before-break: the wave's room, bridge, surge, the trigger's own steps, scheduled,
    fit, converged; then the bridge put to rest and the surge released."""
    strategy = strategy_for(trigger, surge=True)
    assert strategy.trigger is trigger and strategy.marks_lazy == strategy_for(trigger).marks_lazy
    assert list(strategy.steps()) == [
        K.RESERVE_ROOM,
        K.BRIDGE,
        K.SURGE,
        *inner,
        K.GATE_SCHEDULED,
        K.FIT,
        K.GATE_CONVERGED,
        K.HEALTH_CHECK,
        K.RELEASE_BRIDGE,
        K.RELEASE_SURGE,
        K.HEALTH_CHECK,
    ]


def test_every_step_that_holds_capacity_is_given_back_by_a_later_step() -> None:
    """In every strategy's list, a step holding room is followed by the step its table row
    names as its undo (the room never outlives the wave)."""
    for surge in (False, True):
        for trigger in Trigger:
            kinds = list(strategy_for(trigger, surge=surge).steps())
            for i, kind in enumerate(kinds):
                spec = STEPS[kind]
                if spec.holds_capacity:
                    assert spec.undo is not None and spec.undo in kinds[i + 1 :]


def _binding(*, placement: Any, claimed: bool, triggered_at: datetime | None) -> BindingView:
    labels = {"clusterpropagationpolicy.karmada.io/permanent-id": "x"} if claimed else {}
    spec: dict[str, Any] = {"placement": placement}
    if triggered_at is not None:
        spec["rescheduleTriggeredAt"] = triggered_at.isoformat()
    return BindingView({"metadata": {"labels": labels}, "spec": spec})


@pytest.mark.parametrize(
    ("claimed", "placement", "at", "touch", "rebalance", "both"),
    [
        (True, RAW_PLACEMENT, CREATED, True, True, True),
        (False, RAW_PLACEMENT, CREATED, False, True, False),  # unclaimed: the scheduler ignores it
        (True, {}, CREATED, False, True, False),  # old placement
        (True, RAW_PLACEMENT, CREATED - timedelta(seconds=1), True, False, False),  # older trigger
        (True, RAW_PLACEMENT, None, True, False, False),
    ],
)
def test_what_counts_as_triggered(
    claimed: bool, placement: Any, at: datetime | None, touch: bool, rebalance: bool, both: bool
) -> None:
    """touch: new placement and claimed; rebalance: triggered at or after the rebalancer."""
    workload = Workload(WorkloadKey("ns", "w", "Deployment", "apps/v1"), {}, None, "p")
    target = WaveTarget(workload, placement=PLACEMENT, trigger_time=CREATED)
    binding = _binding(placement=placement, claimed=claimed, triggered_at=at)
    assert [s.triggered(target, binding) for s in (Touch(), Rebalance(), Both())] == [
        touch,
        rebalance,
        both,
    ]


@pytest.mark.parametrize(
    ("trigger", "moved", "done", "needs"),
    [
        (Trigger.TOUCH, True, True, True),
        (Trigger.TOUCH, False, False, False),
        (Trigger.REBALANCE, True, True, False),
        (Trigger.REBALANCE, False, False, True),
        (Trigger.BOTH, False, False, True),
        (Trigger.BOTH, True, True, True),
        (Trigger.BOTH, False, True, False),
    ],
)
def test_what_still_needs_moving(trigger: Trigger, moved: bool, done: bool, needs: bool) -> None:
    """touch: the binding's placement differs; rebalance: the policies are not done; both:
    either."""
    now = Placement({"other": 1}) if moved else PLACEMENT
    assert strategy_for(trigger).needs_move(now, PLACEMENT, done) is needs
