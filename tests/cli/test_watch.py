"""The view model of `tidal status --watch`: a journal and a snapshot of the run's bindings
in, rows out, with exact figures (no 19/5, the destination on every row, converged counts that
advance with the bindings)."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from tidal.cli.progress import WaveState
from tidal.cli.watch import document, floor_notes, run_rows, template_key, view_of
from tidal.domain.floors import FloorRule
from tidal.domain.waves import WorkloadKey
from tidal.engine.journal import RunState, WaveLeg
from tidal.engine.journal import WaveState as WaveRecord
from tidal.engine.states import Direction, Phase, WaveResult

NS = "ai-app"


def _binding(
    name: str, assigned: dict[str, int], ready: dict[str, int], *, observed: bool = True
) -> dict[str, Any]:
    return {
        "metadata": {"name": f"{name}-deployment", "namespace": NS, "generation": 3},
        "spec": {
            "resource": {"kind": "Deployment", "namespace": NS, "name": name},
            "clusters": [{"name": c, "replicas": n} for c, n in assigned.items()],
        },
        "status": {
            "schedulerObservedGeneration": 3 if observed else 2,
            "aggregatedStatus": [
                {"clusterName": c, "status": {"readyReplicas": n}} for c, n in ready.items()
            ],
        },
    }


def _day_run(wave_two: WaveResult | None = None) -> RunState:
    """A day switch of ten 5-replica workloads in two waves of five, back to cluster-a: wave 1
    done, wave 2 under way."""
    waves = [
        WaveRecord(
            1,
            [WorkloadKey.parse(f"{NS}/Deployment/w{i}") for i in range(5)],
            result=WaveResult.SUCCEEDED,
            started_at="2026-12-05T06:00:00Z",
            finished_at="2026-12-05T06:01:00Z",
        ),
        WaveRecord(
            2,
            [WorkloadKey.parse(f"{NS}/Deployment/w{i}") for i in range(5, 10)],
            result=wave_two,
            started_at="2026-12-05T06:01:00Z",
            forward=WaveLeg(
                Direction.FORWARD, triggered=[f"{NS}/Deployment/w{i}" for i in range(5, 10)]
            ),
        ),
    ]
    return RunState(
        "team-2001", "day", "r1", phase=Phase.WAVES, waves=waves, started_at="2026-12-05T06:00:00Z"
    )


def _snapshot(ready_on_a: int) -> dict[str, dict[str, Any]]:
    """Wave 1's five on cluster-a 3 / cluster-b 2, ready; wave 2's five scheduled the same,
    `ready_on_a` of them with their 3 cluster-a pods ready, all still with 5 ready on b."""
    out = {}
    for i in range(5):
        out[f"{NS}/Deployment/w{i}"] = _binding(
            f"w{i}", {"cluster-a": 3, "cluster-b": 2}, {"cluster-a": 3, "cluster-b": 2}
        )
    for i in range(5, 10):
        on_a = 3 if i - 5 < ready_on_a else 0
        out[f"{NS}/Deployment/w{i}"] = _binding(
            f"w{i}",
            {"cluster-a": 3, "cluster-b": 2},
            {"cluster-a": on_a, "cluster-b": 5 if on_a == 0 else 2},
        )
    return out


def _clusters(row: Any) -> str:
    text: str = row.clusters()
    return text


def test_rows_count_ready_over_desired_with_the_leaving_pods_apart() -> None:
    """Wave 2 with none of cluster-a's pods ready: cluster-a 0/15 (the destination shown),
    cluster-b 10/10 with 15 leaving (never 25/10); wave 1 5/5 converged."""
    one, two = run_rows(_day_run(), _snapshot(0))
    assert (one.state, one.converged, one.total) == (WaveState.SUCCEEDED, 5, 5)
    assert _clusters(one) == "cluster-a 15/15  cluster-b 10/10"
    assert (two.state, two.converged, two.total) == (WaveState.RUNNING, 0, 5)
    assert _clusters(two) == "cluster-a 0/15  cluster-b 10/10 (15 leaving)"


def test_converged_counts_advance_as_the_destination_pods_become_ready() -> None:
    """2 of wave 2's workloads ready on cluster-a: 2/5 converged; all five: 5/5, and the
    journal's end of the wave keeps it 5/5."""
    assert run_rows(_day_run(), _snapshot(2))[1].converged == 2
    assert (
        _clusters(run_rows(_day_run(), _snapshot(2))[1])
        == "cluster-a 6/15  cluster-b 10/10 (9 leaving)"
    )
    assert run_rows(_day_run(), _snapshot(5))[1].converged == 5
    done = run_rows(_day_run(WaveResult.SUCCEEDED), _snapshot(5))[1]
    assert (done.state, done.converged) == (WaveState.SUCCEEDED, 5)


def test_a_binding_the_scheduler_has_not_seen_is_not_converged() -> None:
    """A binding whose latest spec the scheduler has not observed does not count."""
    snapshot = _snapshot(5)
    snapshot[f"{NS}/Deployment/w9"] = _binding(
        "w9", {"cluster-a": 3, "cluster-b": 2}, {"cluster-a": 3, "cluster-b": 2}, observed=False
    )
    assert run_rows(_day_run(), snapshot)[1].converged == 4


def test_a_wave_not_started_waits_and_still_lists_every_cluster_of_the_run() -> None:
    """A night run's wave 2 not started: waiting, 0/5, and its row names cluster-b (where
    wave 1 went) at 0/0 beside its own cluster-a figures."""
    state = RunState(
        "team-2001",
        "night",
        "r2",
        phase=Phase.WAVES,
        waves=[
            WaveRecord(
                1, [WorkloadKey.parse("ai-app/Deployment/w0")], started_at="2026-12-05T22:00:00Z"
            ),
            WaveRecord(2, [WorkloadKey.parse("ai-app/Deployment/w1")]),
        ],
    )
    snapshot = {
        "ai-app/Deployment/w0": _binding("w0", {"cluster-b": 5}, {"cluster-a": 5}),
        "ai-app/Deployment/w1": _binding("w1", {"cluster-a": 5}, {"cluster-a": 5}),
    }
    one, two = run_rows(state, snapshot)
    assert (one.state, one.converged) == (WaveState.RUNNING, 0)
    assert _clusters(one) == "cluster-a 0/0 (5 leaving)  cluster-b 0/5"
    assert (two.state, two.converged, two.total) == (WaveState.WAITING, 0, 1)
    assert _clusters(two) == "cluster-a 5/5  cluster-b 0/0"


def test_floor_notes_give_the_lowest_ready_against_the_floor() -> None:
    """A cluster-b floor of 2 and an every-cluster floor of 1 over the day run: lowest 2 in
    cluster-b; 0 in some kept cluster (wave 2's cluster-a pods are not ready yet)."""
    notes = floor_notes(
        _day_run(),
        _snapshot(0),
        [FloorRule(("cluster-b",), 2), FloorRule(("*",), 1), FloorRule(None, None, 50.0)],
    )
    assert notes == [
        "floor cluster-b: lowest 2 ready (needs 2)",
        "floor each kept cluster: lowest 0 ready (needs 1)",
    ]


def test_the_json_document_and_the_drawn_view_say_the_same() -> None:
    """The JSON of a refresh splits ready from leaving; the rendered view shows the rows."""
    state = _day_run()
    rows = run_rows(state, _snapshot(0))
    doc = document(state, rows, [])
    assert doc["waves"][1]["clusters"] == {
        "cluster-a": {"ready": 0, "desired": 15, "leaving": 0},
        "cluster-b": {"ready": 10, "desired": 10, "leaving": 15},
    }
    assert (doc["waves"][0]["converged"], doc["waves"][0]["total"]) == (5, 5)
    console = Console(width=160, record=True, file=io.StringIO())
    console.print(view_of(state, rows).render())
    text = console.export_text()
    assert "team-2001/day run r1: running (waves)" in text
    assert "cluster-a 0/15" in text and "25/10" not in text


def test_a_binding_is_keyed_by_the_template_it_binds() -> None:
    """spec.resource names the template: namespace/Kind/name."""
    assert template_key(_binding("w1", {}, {})) == "ai-app/Deployment/w1"


def test_a_cluster_the_run_left_stays_listed_from_the_journals_samples() -> None:
    """Every pod gone from cluster-a (the bindings name only cluster-b): the row still says
    cluster-a 0/0, since the run's samples saw it."""
    state = RunState(
        "team-2001",
        "night",
        "r3",
        phase=Phase.DONE,
        waves=[
            WaveRecord(
                1,
                [WorkloadKey.parse("ai-app/Deployment/w0")],
                result=WaveResult.SUCCEEDED,
                started_at="2026-12-05T22:00:00Z",
                samples=[
                    {"t": 1.0, "ready": {"cluster-a": 5}, "desired": {"cluster-b": 5}, "lowest": {}}
                ],
            )
        ],
    )
    (row,) = run_rows(
        state, {"ai-app/Deployment/w0": _binding("w0", {"cluster-b": 5}, {"cluster-b": 5})}
    )
    assert _clusters(row) == "cluster-a 0/0  cluster-b 5/5"


def test_a_wave_that_has_not_written_its_triggers_converges_nothing() -> None:
    """Wave 2 started but its touches not written yet: its bindings, ready on their old
    placement, count 0/5 converged (not 5/5); once three are touched, 3/5."""
    state = _day_run()
    state.waves[1].forward.triggered = []
    assert run_rows(state, _snapshot(5))[1].converged == 0
    state.waves[1].forward.triggered = [f"{NS}/Deployment/w{i}" for i in range(5, 8)]
    assert run_rows(state, _snapshot(5))[1].converged == 3
    state.waves[1].forward.triggered, state.waves[1].rebalancers = [], ["tidal-r1-2"]
    assert run_rows(state, _snapshot(5))[1].converged == 5
