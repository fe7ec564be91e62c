"""Trigger strategies: what each arms a wave with, what it counts as triggered, what it plans."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tidal.domain.waves import WorkloadKey
from tidal.engine.gates import WaveTarget
from tidal.engine.outcome import WaveOutcome
from tidal.engine.resolve import Workload
from tidal.engine.states import Gate, Trigger
from tidal.engine.strategies import Both, Rebalance, Touch, TriggerStrategy, strategy_for
from tidal.engine.triggers import normalize_placement
from tidal.karmada.views import BindingView

CREATED = datetime(2026, 6, 1, 23, 0, tzinfo=UTC)
PLACEMENT = normalize_placement({"clusterAffinity": {"clusterNames": ["b"]}})


class RecordingWave:
    """Stands in for WaveRun: records the primitives a strategy calls, in order."""

    def __init__(self, scheduled: bool = True) -> None:
        self.calls: list[str] = []
        self.scheduled_ok = scheduled

    def touch(self) -> None:
        self.calls.append("touch")

    def rebalance(self) -> WaveOutcome | None:
        self.calls.append("rebalance")
        return None

    def gate(self, until: Gate) -> WaveOutcome:
        self.calls.append(f"gate:{until}")
        return WaveOutcome(self.scheduled_ok)

    def scheduled(self) -> WaveOutcome:
        self.calls.append("scheduled")
        return WaveOutcome(self.scheduled_ok)

    def reserve(self) -> WaveOutcome | None:
        self.calls.append("reserve")
        return None

    def bridge(self) -> WaveOutcome | None:
        self.calls.append("bridge")
        return None

    def release_bridge(self) -> WaveOutcome | None:
        self.calls.append("release_bridge")
        return None

    def surge(self) -> WaveOutcome | None:
        self.calls.append("surge")
        return None

    def fit(self) -> None:
        self.calls.append("fit")

    def release(self) -> WaveOutcome | None:
        self.calls.append("release")
        return None


@pytest.mark.parametrize(
    ("strategy", "calls"),
    [
        (Touch(), ["touch"]),
        (Rebalance(), ["rebalance"]),
        (Both(), ["touch", "gate:scheduled", "rebalance"]),
    ],
)
def test_each_strategy_arms_a_wave_with_its_own_primitives(
    strategy: TriggerStrategy, calls: list[str]
) -> None:
    """touch annotates, rebalance creates a rebalancer, both touches then waits, then rebalances."""
    wave = RecordingWave()
    assert strategy.arm(wave) is None
    assert wave.calls == calls
    assert strategy.settle(wave) is None


@pytest.mark.parametrize(
    ("trigger", "inner"),
    [
        (Trigger.TOUCH, ["touch"]),
        (Trigger.REBALANCE, ["rebalance"]),
        (Trigger.BOTH, ["touch", "gate:scheduled", "rebalance"]),
    ],
)
def test_a_surge_strategy_surges_before_its_trigger_and_releases_after(
    trigger: Trigger, inner: list[str]
) -> None:
    """Make-before-break: the wave's room, bridge, surge, the trigger's own steps, scheduled,
    fit; settle puts the bridge to rest and releases the surge."""
    strategy = strategy_for(trigger, surge=True)
    assert strategy.trigger is trigger and strategy.marks_lazy == strategy_for(trigger).marks_lazy
    wave = RecordingWave()
    assert strategy.arm(wave) is None
    assert wave.calls == ["reserve", "bridge", "surge", *inner, "scheduled", "fit"]
    assert strategy.settle(wave) is None and wave.calls[-2:] == ["release_bridge", "release"]


def test_a_surge_that_fails_moves_nothing() -> None:
    """A failed surge (timeout, floor) ends the wave before any trigger is written."""

    class Failing(RecordingWave):
        def surge(self) -> WaveOutcome | None:
            self.calls.append("surge")
            return WaveOutcome(False)

    wave = Failing()
    outcome = strategy_for(Trigger.TOUCH, surge=True).arm(wave)
    assert outcome is not None and not outcome.ok and wave.calls == ["reserve", "bridge", "surge"]


def test_a_bridge_that_fails_moves_nothing() -> None:
    """A failed bridge (timeout, floor) ends the wave before any surge or trigger."""

    class Failing(RecordingWave):
        def bridge(self) -> WaveOutcome | None:
            self.calls.append("bridge")
            return WaveOutcome(False)

    wave = Failing()
    outcome = strategy_for(Trigger.TOUCH, surge=True).arm(wave)
    assert outcome is not None and not outcome.ok and wave.calls == ["reserve", "bridge"]


def test_a_wave_without_room_neither_bridges_nor_surges() -> None:
    """No room for the wave within its timeout: it ends before its bridge or surge writes."""

    class Full(RecordingWave):
        def reserve(self) -> WaveOutcome | None:
            self.calls.append("reserve")
            return WaveOutcome(False)

    wave = Full()
    outcome = strategy_for(Trigger.TOUCH, surge=True).arm(wave)
    assert outcome is not None and not outcome.ok and wave.calls == ["reserve"]


def test_both_stops_when_the_touch_does_not_schedule() -> None:
    """A failed `scheduled` gate after the touch ends the wave before any rebalance."""
    wave = RecordingWave(scheduled=False)
    outcome = Both().arm(wave)
    assert outcome is not None and not outcome.ok
    assert wave.calls == ["touch", "gate:scheduled"]


def _binding(*, placement: Any, claimed: bool, triggered_at: datetime | None) -> BindingView:
    labels = {"clusterpropagationpolicy.karmada.io/permanent-id": "x"} if claimed else {}
    spec: dict[str, Any] = {"placement": placement}
    if triggered_at is not None:
        spec["rescheduleTriggeredAt"] = triggered_at.isoformat()
    return BindingView({"metadata": {"labels": labels}, "spec": spec})


@pytest.mark.parametrize(
    ("claimed", "placement", "at", "touch", "rebalance", "both"),
    [
        (True, PLACEMENT, CREATED, True, True, True),
        (False, PLACEMENT, CREATED, False, True, False),  # unclaimed: the scheduler ignores it
        (True, {}, CREATED, False, True, False),  # old placement
        (True, PLACEMENT, CREATED - timedelta(seconds=1), True, False, False),  # older trigger
        (True, PLACEMENT, None, True, False, False),
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
    now = {"other": 1} if moved else PLACEMENT
    assert strategy_for(trigger).needs_move(now, PLACEMENT, done) is needs
