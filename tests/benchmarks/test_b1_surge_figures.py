"""The B1 surge arm's figures from hand-built timelines: the lowest per-workload availability,
the GPUs held beyond the steady state, and the capacity bound's rounds."""

from __future__ import annotations

from typing import Any

from benchmarks.b1_surge import Bound
from benchmarks.timeline import lowest_workload_percent, peak_extra_held

W = "ai-app/Deployment/w"
V = "ai-app/Deployment/v"


def _s(t: float, workload: str, cluster: str, assigned: int, ready: int) -> dict[str, Any]:
    return {"t": t, "workload": workload, "cluster": cluster, "assigned": assigned, "ready": ready}


# w: 4 replicas 3/1 by day; surged to b=4 while a holds 3, then a drops to 0
SURGED = [
    _s(0, W, "a", 3, 3),
    _s(0, W, "b", 1, 1),
    _s(0, V, "b", 2, 2),
    _s(10, W, "b", 4, 1),
    _s(15, W, "b", 4, 4),
    _s(16, W, "a", 0, 0),
]


def test_a_surged_move_keeps_every_workload_at_full_availability() -> None:
    """Raising the destination before the source drops never lowers any workload's ready share."""
    assert lowest_workload_percent(SURGED, {W: 4, V: 2}, 5, 20) == 100.0


def test_a_direct_move_shows_the_dip_of_the_worst_workload() -> None:
    """A move that cuts the source first reports the workload's lowest ready share."""
    direct = [*SURGED[:3], _s(10, W, "a", 0, 0), _s(10, W, "b", 4, 1), _s(15, W, "b", 4, 4)]
    assert lowest_workload_percent(direct, {W: 4, V: 2}, 5, 20) == 25.0


def test_peak_extra_counts_replicas_held_beyond_the_desired_ones() -> None:
    """While both the raised destination and the held source run, the extra is their overlap."""
    assert peak_extra_held(SURGED, {W: 4, V: 2}, 5, 20) == 3
    assert peak_extra_held(SURGED, {W: 4, V: 2}, 17, 20) == 0


def test_peak_extra_ignores_workloads_outside_the_fleet() -> None:
    """Samples of other workloads (another tenant) do not count as the fleet's extra."""
    other = [*SURGED, _s(11, "ai-app/Deployment/other", "b", 50, 50)]
    assert peak_extra_held(other, {W: 4, V: 2}, 5, 20) == 3


def test_capacity_bound_is_rounds_of_start_up() -> None:
    """The bound is ceil(replicas to start / free GPUs) rounds of scheduling + start-up."""
    assert Bound(264, 294, 5.1).seconds == 5.1
    assert Bound(300, 100, 5.0).rounds == 3
    assert Bound(300, 100, 5.0).seconds == 15.0
    assert Bound(0, 100, 5.0).seconds == 0.0


def test_peak_extra_counts_a_surge_already_held_at_the_start() -> None:
    """A raise written before the interval and still held counts from the interval's start."""
    assert peak_extra_held(SURGED, {W: 4, V: 2}, 12, 14) == 3
