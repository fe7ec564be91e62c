"""The end of `tidal demo`: each team's start and end split per cluster, with why they differ,
and the picture's data from the emulator's timeline (fixed inputs, exact figures)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tidal.domain.floors import FloorRule
from tidal.engine.events import RunFinished, RunStarted, WaveFinished, WaveStarted
from tidal.engine.states import RunResult, Trigger, WaveResult
from tidal_sim.demo.picture import draw_demo, team_series, team_splits, why
from tidal_sim.demo.scenario import DemoWindow
from tidal_sim.demo.tracking import Tracker

AT = datetime(2026, 12, 5, 6, 0, tzinfo=UTC)
W0, W1 = "ai-app/Deployment/w0", "ai-app/Deployment/w1"
START = {"cluster-a": 20, "cluster-b": 30}


def test_a_dynamic_team_ending_elsewhere_says_why() -> None:
    """team-2001 by day A15/B35 against a start of A20/B30: the sentence names both splits and
    the free-capacity division (and the general estimator alone at the start)."""
    text = why(
        "team-2001", START, {"cluster-a": 15, "cluster-b": 35}, dynamic=True, team_limited=True
    )
    assert text.startswith(
        "team-2001 ends at cluster-a 15, cluster-b 35, not its start's "
        "cluster-a 20, cluster-b 30: its policy divides replicas by each "
        "cluster's free capacity (dynamicWeight: AvailableReplicas)"
    )
    assert "general estimator alone" in text


def test_a_team_back_at_its_start_says_so() -> None:
    """Static weights back to A60/B20: it ends where it started."""
    assert (
        why(
            "team-1005",
            {"cluster-a": 60, "cluster-b": 20},
            {"cluster-a": 60, "cluster-b": 20},
            dynamic=False,
            team_limited=False,
        )
        == "team-1005 ends where it started: the last window puts its start placement back"
    )


def _tracker() -> Tracker:
    now = [0.0]
    night = DemoWindow("team-2001", "night", AT, "0 6 * * *", "0 22 * * *", "Europe/Berlin")
    tracker = Tracker(
        [night],
        {("team-2001", "night"): [FloorRule(("*",), 1)]},
        {"team-2001": {W0, W1}},
        lambda: now[0],
        totals=lambda s: {"cluster-a": (0, 0), "cluster-b": (50, 50)},
    )
    base: dict[str, Any] = {"schedule": "team-2001", "window": "night", "run_id": "r"}
    now[0] = 100.0
    tracker.on_event(RunStarted(**base, workloads=2, waves=1, trigger=Trigger.REBALANCE))
    tracker.on_event(WaveStarted(**base, wave=1, workloads=(W0, W1), trigger=Trigger.REBALANCE))
    now[0] = 130.0
    tracker.on_event(WaveFinished(**base, wave=1, result=WaveResult.SUCCEEDED))
    tracker.on_event(RunFinished(**base, result=RunResult.SUCCEEDED))
    return tracker


def test_team_splits_name_the_start_and_each_window() -> None:
    """The start split, the split after the night, and the reason, per schedule."""
    (split,) = team_splits(
        _tracker(), {"team-2001": START}, {"team-2001": True}, {"team-2001": False}
    )
    assert split.start == START
    assert split.after == {"night": {"cluster-a": 0, "cluster-b": 50}}
    assert split.end == {"cluster-a": 0, "cluster-b": 50}
    assert "not its start's cluster-a 20, cluster-b 30" in split.why
    assert split.to_json()["end"] == {"cluster-a": 0, "cluster-b": 50}


def test_team_series_sums_the_team_per_cluster_from_the_timeline() -> None:
    """Two workloads moving from cluster-a to cluster-b: per-cluster totals at each change,
    what held before the window as the first point, held to the right edge; others ignored."""
    samples = [
        {"t": 50.0, "workload": W0, "cluster": "cluster-a", "assigned": 5, "ready": 5},
        {"t": 50.0, "workload": W1, "cluster": "cluster-a", "assigned": 5, "ready": 5},
        {
            "t": 50.0,
            "workload": "ai-app/Deployment/other",
            "cluster": "cluster-a",
            "assigned": 9,
            "ready": 9,
        },
        {"t": 101.0, "workload": W0, "cluster": "cluster-b", "assigned": 5, "ready": 0},
        {"t": 101.0, "workload": W0, "cluster": "cluster-a", "assigned": 0, "ready": 5},
        {"t": 104.0, "workload": W0, "cluster": "cluster-b", "assigned": 5, "ready": 5},
        {"t": 105.0, "workload": W0, "cluster": "cluster-a", "assigned": 0, "ready": 0},
    ]
    a, b = team_series(samples, {W0, W1}, 90.0, 150.0)
    assert a.points == ((0.0, 10, 10), (11.0, 10, 5), (15.0, 5, 5), (60.0, 5, 5))
    assert b.points == ((11.0, 0, 5), (14.0, 5, 5), (60.0, 5, 5))


def test_the_demo_picture_is_a_small_png(tmp_path: Path) -> None:
    """One panel per team and window, written as a PNG under 150 KB."""
    samples = [{"t": 95.0, "workload": W0, "cluster": "cluster-b", "assigned": 5, "ready": 5}]
    png = draw_demo(tmp_path / "demo.png", _tracker(), samples, 200.0)
    data = png.read_bytes()
    assert data[:4] == b"\x89PNG" and len(data) < 150_000
