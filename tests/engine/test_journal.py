"""The run journal: state round-trips through JSON and a second writer is fenced out."""

from __future__ import annotations

import pytest

from tidal.domain.waves import WorkloadKey
from tidal.engine.journal import InMemoryJournal, PolicyRecord, RunState, WaveLeg, WaveState
from tidal.engine.states import Direction, LazyMark, Phase, WaveResult
from tidal.karmada.errors import Conflict


def _state() -> RunState:
    return RunState(
        schedule="team",
        window="night",
        run_id="r1",
        phase=Phase.WAVES,
        policies=[
            PolicyRecord(
                kind="ClusterPropagationPolicy", name="p", pre_image={"a": 1}, lazy=LazyMark.ADDED
            )
        ],
        waves=[
            WaveState(
                index=0,
                workloads=[WorkloadKey.parse("ns/Deployment/a")],
                result=WaveResult.SUCCEEDED,
                forward=WaveLeg(Direction.FORWARD, triggered=["ns/Deployment/a"]),
            )
        ],
    )


def test_state_round_trips_through_json() -> None:
    """to_json/from_json keep everything a resume needs."""
    state = _state()
    again = RunState.from_json(state.to_json())
    assert again == state
    assert again.completed_waves == [0]


def test_save_then_load_then_save_works() -> None:
    """A writer that loaded the latest state may save over it."""
    journal = InMemoryJournal()
    state = _state()
    journal.save(state)
    loaded = journal.load("team")
    assert loaded is not None
    loaded.phase = Phase.DONE
    journal.save(loaded)
    assert journal.load("team").phase == "done"  # type: ignore[union-attr]


def test_second_writer_gets_conflict() -> None:
    """A save from a stale copy raises Conflict (the engine turns it into FencedOut)."""
    journal = InMemoryJournal()
    state = _state()
    journal.save(state)
    journal.steal("team")
    with pytest.raises(Conflict):
        journal.save(state)


def test_a_stored_0_1_0_journal_writes_back_the_values_it_read() -> None:
    """Typed states in memory, the stored keys and values unchanged (only keys added since)."""
    import json
    from pathlib import Path

    stored = json.loads(
        (Path(__file__).parent / "fixtures" / "journal-0.1.0-mid-run.json").read_text()
    )
    again = RunState.from_dict(stored).to_dict()
    assert set(again) - set(stored) == {"scheduleHash", "scheduleSnapshot", "startedBy"}
    assert {k: again[k] for k in stored} == stored
