"""A journal written by the release before the wave kernel (no step index: main at 78c11f3,
stored as a fixture, and journals of crashed runs with their marks taken out) resumes on the
kernel: the step to go on from is derived from the wave's surge and bridge records."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

from tests.e2e.surge_helpers import FULL_AVAILABILITY, no_overrides, surge_schedule, team
from tests.e2e.switch_helpers import MakeEmulator, client_for, load_one
from tests.engine.crashing import crash_run, crashed_while_wave_1_surges
from tidal.domain.clock import SystemClock
from tidal.engine import events as ev
from tidal.engine.inflight import WaveInFlight
from tidal.engine.journal import InMemoryJournal, RunState, StepMark, WaveLeg, WaveState
from tidal.engine.resolve import Workload
from tidal.engine.runner import PAST_THE_LAST, resume_index
from tidal.engine.states import BridgeStep, Direction, SurgeStep, Trigger
from tidal.engine.steps import StepKind
from tidal.engine.strategies import strategy_for
from tidal.engine.switch import run_switch
from tidal.engine.wave_steps import build

FIXTURES = Path(__file__).parent / "fixtures"
SURGE_MID_RUN = FIXTURES / "journal-78c11f3-surge-mid-run.json"
SURGE_STEPS = strategy_for(Trigger.TOUCH, surge=True).steps()


@dataclass
class Resumed:
    """What the steps read of a resumed wave to tell whether they are done."""

    wave: WaveState
    direction: Direction = Direction.FORWARD
    live: list[Workload] = field(default_factory=list)

    @property
    def leg(self) -> WaveLeg:
        return self.wave.leg(self.direction)

    @property
    def triggered_before(self) -> list[str]:
        return self.leg.triggered


def _second_wave(change: dict[str, Any] | None = None) -> WaveState:
    stored = json.loads(SURGE_MID_RUN.read_text())
    assert "step" not in stored["waves"][1]  # written before the kernel
    stored["waves"][1].update(change or {})
    return RunState.from_dict(stored).waves[1]


def test_the_stored_mid_surge_journal_goes_on_at_its_surge() -> None:
    """Bridge restored, surge surged: room (replayed), bridge done, the surge is where it is."""
    wave = _second_wave()
    index = resume_index(cast(WaveInFlight, Resumed(wave)), build(SURGE_STEPS))
    assert SURGE_STEPS[index] is StepKind.SURGE


def test_the_stored_journal_mid_bridge_goes_on_at_its_bridge() -> None:
    """The same journal caught while the bridged replicas start (bridge touching, surge not
    begun): it goes on at the bridge."""
    stored = json.loads(SURGE_MID_RUN.read_text())["waves"][1]
    bridge = {**stored["bridge"], "step": str(BridgeStep.TOUCHING)}
    surge = {**stored["surge"], "step": str(SurgeStep.NONE), "overrides": []}
    wave = _second_wave({"bridge": bridge, "surge": surge})
    index = resume_index(cast(WaveInFlight, Resumed(wave)), build(SURGE_STEPS))
    assert SURGE_STEPS[index] is StepKind.BRIDGE


def _as_written_before_the_kernel(journal: InMemoryJournal) -> StepMark:
    """Take the step marks out of the crashed run's journal; the first wave's mark."""
    state = journal.load("team-s")
    assert state is not None
    mark = state.waves[0].forward.step
    assert mark is not None
    for wave in state.waves:
        wave.forward.step = wave.back.step = None
    journal.save(state)
    return mark


def _resume(client: Any, loaded: Any, journal: InMemoryJournal) -> RunState:
    record = run_switch(client, loaded, "night", clock=SystemClock(), journal=journal)
    assert record.result == "succeeded", record.to_json()
    final = journal.load("team-s")
    assert final is not None
    assert final.waves[0].forward.step == StepMark(len(SURGE_STEPS), PAST_THE_LAST)
    return final


@pytest.mark.e2e
def test_a_journal_without_step_index_resumes_mid_surge(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Crashed while wave 1's surged replicas start, its marks taken out: the resume goes on
    with the surge and ends clean (no override left)."""
    emu = make_switch_emulator(team([5, 5, 5, 5], b_gpus=64))
    client, loaded, journal = crashed_while_wave_1_surges(emu, tmp_path)
    assert _as_written_before_the_kernel(journal).kind == StepKind.SURGE
    final = _resume(client, loaded, journal)
    assert (
        final.waves[0].forward.surge is not None
        and final.waves[0].forward.surge.step is SurgeStep.RELEASED
    )
    no_overrides(client)


@pytest.mark.e2e
def test_a_journal_without_step_index_resumes_mid_bridge(
    make_switch_emulator: MakeEmulator, tmp_path: Path
) -> None:
    """Crashed while the bridged replicas start, its marks taken out: the resume goes on with
    the bridge, and the bridge ends released."""
    emu = make_switch_emulator(team([1, 2]))
    client = client_for(emu, tmp_path)
    loaded = load_one(surge_schedule(tmp_path, FULL_AVAILABILITY))
    journal = InMemoryJournal()
    touching: list[bool] = []

    def waiting(e: Any) -> bool:
        if isinstance(e, ev.BridgeStepped) and e.step is BridgeStep.TOUCHING:
            touching.append(True)
        return bool(touching) and isinstance(e, ev.WaveProgress)

    crash_run(client, loaded, journal, waiting)
    assert _as_written_before_the_kernel(journal).kind == StepKind.BRIDGE
    final = _resume(client, loaded, journal)
    assert final.waves[0].forward.bridge is not None
    assert final.waves[0].forward.bridge.step is BridgeStep.RELEASED
    no_overrides(client)
