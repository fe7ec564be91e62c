"""Journals written by the release before the shared outcome enums (main at 78c11f3, stored as
fixtures) load into the typed run state and are written back byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tidal.domain.outcomes import RunResult, Strategy, Trigger, WaveResult
from tidal.engine.journal import RunState, StepMark, WaveLeg
from tidal.engine.states import BridgeStep, Direction, Phase, SurgeStep

FIXTURES = Path(__file__).parent / "fixtures"
SURGE_MID_RUN = FIXTURES / "journal-78c11f3-surge-mid-run.json"
ROLLED_BACK = FIXTURES / "journal-78c11f3-rolled-back.json"


@pytest.mark.parametrize("fixture", [SURGE_MID_RUN, ROLLED_BACK], ids=lambda p: p.stem)
def test_a_stored_journal_is_written_back_unchanged(fixture: Path) -> None:
    """Loading a stored journal and saving it again gives the same JSON, key for key."""
    stored = json.loads(fixture.read_text())
    assert RunState.from_dict(stored).to_dict() == stored


def test_a_surge_run_in_flight_loads_with_typed_strategy_and_steps() -> None:
    """The stored surge run reads back as Strategy.SURGE with its surge and bridge steps."""
    state = RunState.from_dict(json.loads(SURGE_MID_RUN.read_text()))
    assert state.strategy is Strategy.SURGE and state.trigger is Trigger.TOUCH
    assert state.phase is Phase.WAVES and state.result is None
    assert state.completed_waves == [1]
    second = state.waves[1]
    assert second.forward.surge is not None and second.forward.surge.step is SurgeStep.SURGED
    assert second.forward.bridge is not None and second.forward.bridge.step is BridgeStep.RESTORED


def test_a_rolled_back_run_loads_with_typed_results() -> None:
    """The stored rolled-back run (no strategy key: direct) keeps its run and wave results."""
    state = RunState.from_dict(json.loads(ROLLED_BACK.read_text()))
    assert state.strategy is Strategy.DIRECT and state.trigger is Trigger.BOTH
    assert state.result is RunResult.ROLLED_BACK
    assert [w.result for w in state.waves] == [
        WaveResult.ROLLED_BACK,
        WaveResult.FAILED_ROLLED_BACK,
    ]


def test_an_unknown_strategy_is_named_in_one_line() -> None:
    """A journal naming a strategy this release does not know is refused, naming it."""
    stored = json.loads(SURGE_MID_RUN.read_text())
    stored["strategy"] = "canary"
    with pytest.raises(ValueError, match="unknown run strategy 'canary'"):
        RunState.from_dict(stored)


BOTH_LEGS = FIXTURES / "journal-ee78030-both-legs.json"


def test_a_journal_with_both_legs_is_written_back_byte_for_byte() -> None:
    """A rollback under way, written by the release before the legs (main at ee78030, with its
    twin fields: triggered/rollbackTriggered, surge/surgeBack, bridge/bridgeBack,
    step/stepBack): loaded into the legs and saved again, the same bytes."""
    text = BOTH_LEGS.read_text()
    state = RunState.from_json(text)
    first, second = state.waves
    assert first.forward.triggered == first.back.triggered == ["ns/Deployment/a"]
    assert first.forward.surge is not None and first.forward.surge.step is SurgeStep.RELEASED
    assert first.back.surge is not None and first.back.surge.step is SurgeStep.KEPT
    assert first.forward.bridge is not None and first.forward.bridge.step is BridgeStep.RELEASED
    assert first.back.bridge is not None and first.back.bridge.step is BridgeStep.TOUCHING
    assert first.forward.step == StepMark(11, "done")
    assert first.back.step == StepMark(4, "gate_scheduled")
    assert second.forward == WaveLeg(Direction.FORWARD)
    assert second.back.step == StepMark(0, "reserve_room")
    assert [leg.direction for leg in first.legs] == [Direction.FORWARD, Direction.BACK]
    assert first.leg(Direction.BACK) is first.back
    assert state.to_json() == text
