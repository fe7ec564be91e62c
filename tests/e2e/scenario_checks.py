"""Checks a target-parametrised scenario makes on a timeline of (assigned, ready) samples."""

from __future__ import annotations

from typing import Any

from tests.e2e.targets import Placement


def state_at(timeline: list[dict[str, Any]], t: float) -> Placement:
    out: Placement = {}
    for s in timeline:
        if s["t"] > t:
            break
        out[(s["workload"], s["cluster"])] = (s["assigned"], s["ready"])
    return out


def floor_breaches(
    timeline: list[dict[str, Any]], since: float, cluster: str, workloads: set[str], minimum: int
) -> list[dict[str, Any]]:
    """Samples at or after `since` where a workload had fewer than `minimum` ready in `cluster`
    (a workload absent from a member counts as 0 ready)."""
    before = state_at(timeline, since)
    bad = [
        {
            "t": since,
            "workload": w,
            "cluster": cluster,
            "ready": before.get((w, cluster), (0, 0))[1],
        }
        for w in workloads
        if before.get((w, cluster), (0, 0))[1] < minimum
    ]
    return bad + [
        s
        for s in timeline
        if s["t"] >= since
        and s["cluster"] == cluster
        and s["workload"] in workloads
        and s["ready"] < minimum
    ]


def first_move(timeline: list[dict[str, Any]], since: float, workload: str) -> float | None:
    """When the workload's assigned count first changed in any cluster after `since`."""
    start = state_at(timeline, since)
    for s in timeline:
        if (
            s["t"] >= since
            and s["workload"] == workload
            and s["assigned"] != start.get((workload, s["cluster"]), (0, 0))[0]
        ):
            return float(s["t"])
    return None


def first_leave(timeline: list[dict[str, Any]], since: float, workload: str) -> float | None:
    """When a cluster's assigned count of the workload first fell below what it was at
    `since`: its move, with make-before-break (its surge, which only raises a destination,
    may go up ahead of its wave's turn: tidal.engine.pacing)."""
    start = state_at(timeline, since)
    for s in timeline:
        if (
            s["t"] >= since
            and s["workload"] == workload
            and s["assigned"] < start.get((workload, s["cluster"]), (0, 0))[0]
        ):
            return float(s["t"])
    return None


def converged_at(timeline: list[dict[str, Any]], since: float, workload: str) -> float | None:
    """When the workload first reached its final placement with every replica ready."""
    final = {c: v for (w, c), v in state_at(timeline, float("inf")).items() if w == workload}
    current = {c: v for (w, c), v in state_at(timeline, since).items() if w == workload}

    def done() -> bool:
        return all(current.get(c, (0, 0)) == v and v[0] == v[1] for c, v in final.items())

    if done():
        return since
    for s in timeline:
        if s["t"] >= since and s["workload"] == workload:
            current[s["cluster"]] = (s["assigned"], s["ready"])
            if done():
                return float(s["t"])
    return None


def split(
    now: Placement, workloads: list[str], clusters: tuple[str, ...]
) -> dict[str, dict[str, list[int]]]:
    """{workload: {cluster: [assigned, ready]}} for a report."""
    return {w: {c: list(now.get((w, c), (0, 0))) for c in clusters} for w in workloads}
