"""The picture of a run from its journal: series per cluster from the waves' samples, waves
as spans since the run's start, floors as lines (percentage floors as a note)."""

from __future__ import annotations

from pathlib import Path

from tidal.cli.picture import run_panel
from tidal.domain.floors import FloorRule
from tidal.domain.waves import WorkloadKey
from tidal.engine.journal import RunState, WaveState
from tidal.engine.states import Phase, RunResult, WaveResult
from tidal.plot import FloorLine, Series, WaveSpan, draw, floor_lines

W = [WorkloadKey.parse("ai-app/Deployment/w0")]


def _run() -> RunState:
    return RunState(
        "team-2001",
        "night",
        "r1",
        phase=Phase.DONE,
        result=RunResult.SUCCEEDED,
        started_at="2026-12-05T22:00:00Z",
        waves=[
            WaveState(
                1,
                W,
                result=WaveResult.SUCCEEDED,
                started_at="2026-12-05T22:00:02Z",
                finished_at="2026-12-05T22:00:30Z",
                samples=[
                    {"t": 3.0, "ready": {"cluster-a": 5}, "desired": {"cluster-b": 5}},
                    {"t": 29.5, "ready": {"cluster-b": 5}, "desired": {"cluster-b": 5}},
                ],
            )
        ],
    )


def test_a_run_panel_has_each_cluster_the_waves_and_the_floors() -> None:
    """Both clusters as (t, ready, desired); wave 1 from 2 s to 30 s; the floor line."""
    panel = run_panel(_run(), [FloorRule(("cluster-b",), 1)])
    assert panel.series == (
        Series("cluster-a", ((3.0, 5, 0), (29.5, 0, 0))),
        Series("cluster-b", ((3.0, 0, 5), (29.5, 5, 5))),
    )
    assert panel.waves == (WaveSpan("wave 1", 2.0, 30.0, "succeeded"),)
    assert panel.floors == (FloorLine(1, "floor: 1 ready per workload in cluster-b", "cluster-b"),)
    assert panel.title == "team-2001 / night: run r1, succeeded"


def test_percentage_and_every_cluster_floors() -> None:
    """A percentage floor is a note; a `*` floor one black line."""
    lines, notes = floor_lines([FloorRule(None, None, 50.0), FloorRule(("*",), 1)])
    assert lines == (FloorLine(1, "floor: 1 ready per workload, each cluster kept"),)
    assert notes == ("floor: 50% of each workload's replicas ready",)


def test_a_run_without_samples_says_so_and_still_draws(tmp_path: Path) -> None:
    """A journal from before samples: a note, and a PNG all the same."""
    state = _run()
    state.waves[0].samples = []
    panel = run_panel(state, [])
    assert panel.series == () and "no replica samples" in panel.notes[0]
    png = draw(tmp_path / "p.png", [panel])
    assert png.read_bytes()[:4] == b"\x89PNG"
