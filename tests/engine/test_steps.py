"""The kernel's step table: every kind has a row, answers are plain values, and the cleanup
order of a stopping run is read off the table (what was taken last is given back first)."""

from __future__ import annotations

from tidal.engine.outcome import WaveOutcome
from tidal.engine.states import FailureReason, Trigger
from tidal.engine.steps import DONE, STEPS, Done, Failed, StepKind, WakeOn, answer, undo_order
from tidal.engine.strategies import strategy_for
from tidal.engine.wave_steps import MAKERS

K = StepKind


def test_every_kind_has_a_row_and_a_step_class() -> None:
    """The table and the step classes cover StepKind exactly; each class says its own kind."""
    assert set(STEPS) == set(StepKind) == set(MAKERS)
    assert all(make().kind is kind for kind, make in MAKERS.items())


def test_a_step_holding_capacity_names_its_undo_and_an_undo_holds_nothing() -> None:
    """Each holder is given back by a release step, which itself holds nothing."""
    for spec in STEPS.values():
        if spec.holds_capacity:
            assert spec.undo in (K.RELEASE_SURGE, K.RELEASE_BRIDGE)
            assert not STEPS[spec.undo].holds_capacity


def test_the_cleanup_order_gives_back_the_surge_before_the_bridge() -> None:
    """A surge stands on the bridge: a stopping run takes the surge off first; a direct wave
    holds nothing to give back."""
    surge = strategy_for(Trigger.TOUCH, surge=True).steps()
    assert undo_order(surge) == (K.RELEASE_SURGE, K.RELEASE_BRIDGE)
    assert undo_order(strategy_for(Trigger.BOTH).steps()) == ()


def test_a_primitive_outcome_becomes_an_answer() -> None:
    """None or ok is Done; a failed outcome is Failed with its reason."""
    assert answer(None) is DONE and isinstance(answer(WaveOutcome(True)), Done)
    failed = answer(WaveOutcome(False, FailureReason.TIMEOUT, "late"))
    assert failed == Failed(FailureReason.TIMEOUT, "late")


def test_a_wake_rule_sees_every_event_but_wakes_only_for_its_keys() -> None:
    """`seen` gets every event; `keys` and `when` decide whether the wait ends."""
    seen: list[str] = []
    wake = WakeOn(keys=frozenset({"ns/a"}), seen=lambda key, _obj: seen.append(key))
    assert not wake.wakes("ns/b", None) and wake.wakes("ns/a", {})
    assert seen == ["ns/b", "ns/a"]
    assert not WakeOn(when=lambda: False).wakes("ns/a", {})
