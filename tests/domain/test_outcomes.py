"""The shared outcome enums: their stored strings, metric labels and the schedule's spelling."""

from __future__ import annotations

from typing import get_args

from tidal.domain import rollout
from tidal.domain.outcomes import FailureReason, RunResult, Strategy, WaveResult
from tidal.metrics import RUN_RESULTS, WAVE_FAILURE_REASONS, WAVE_RESULTS


def test_the_schedule_file_spells_the_strategies_of_the_enum() -> None:
    """rollout.strategy accepts exactly the Strategy values (the file format's Literal)."""
    assert set(get_args(rollout.Strategy)) == {s.value for s in Strategy}


def test_metric_labels_come_from_the_enums() -> None:
    """The preset label values are the enums' snake_case labels, in the documented order."""
    assert RUN_RESULTS == ("succeeded", "failed", "rolled_back")
    assert WAVE_RESULTS == ("succeeded", "failed", "rolled_back")
    assert tuple(FailureReason) == WAVE_FAILURE_REASONS
    assert WaveResult.FAILED_ROLLED_BACK.metric_label == "failed"


def test_old_spellings_still_read() -> None:
    """A `rolled_back` result (an older spelling) and a missing strategy read back."""
    assert RunResult("rolled_back") is RunResult.ROLLED_BACK
    assert WaveResult("rolled_back") is WaveResult.ROLLED_BACK
    assert Strategy("") is Strategy.DIRECT
