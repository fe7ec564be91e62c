"""Availability figures from the emulator's timeline of (workload, cluster, assigned, ready).

The timeline holds one sample per change, so ready replicas are step functions of simulated
time; the figures integrate them between the switch's start and the end of the run.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Sample = dict[str, Any]
# (ready per cluster, desired replicas) -> is the workload below its floor?
FloorTest = Callable[[Mapping[str, int], int], bool]
SIMULTANEOUS = 1e-3  # samples closer than this (simulated s) are one instant


@dataclass(frozen=True)
class Floor:
    """Per workload: `min_ready` ready replicas in each of `clusters`, and `min_percent` of the
    desired replicas ready over all clusters."""

    clusters: tuple[str, ...] = ("cluster-b",)
    min_ready: int = 1
    min_percent: float = 50.0

    def below(self, ready: Mapping[str, int], replicas: int) -> bool:
        if replicas <= 0:
            return False
        if any(ready.get(c, 0) < self.min_ready for c in self.clusters):
            return True
        return sum(ready.values()) < math.ceil(replicas * self.min_percent / 100 - 1e-9)

    def describe(self) -> str:
        return (
            f"{self.min_ready} ready in {', '.join(self.clusters)} and "
            f"{self.min_percent:g}% of desired ready overall, per workload"
        )


@dataclass
class Availability:
    zero_ready_workloads: int = 0
    below_floor_workload_seconds: float = 0.0
    lowest_ready_fraction: float = 1.0
    converge_seconds: float = 0.0
    max_below_at_once: int = 0
    worst_workload: str = ""
    below_by_workload: dict[str, float] = field(default_factory=dict)
    zero_ready: list[str] = field(default_factory=list)


def converged_now(samples: Iterable[Sample], replicas: Mapping[str, int]) -> bool:
    """Every workload has all its desired replicas assigned and ready."""
    state: dict[tuple[str, str], tuple[int, int]] = {}
    for s in samples:
        state[(s["workload"], s["cluster"])] = (s["assigned"], s["ready"])
    assigned: dict[str, int] = defaultdict(int)
    ready: dict[str, int] = defaultdict(int)
    for (workload, _), (a, r) in state.items():
        assigned[workload] += a
        ready[workload] += r
    return all(assigned.get(w, 0) == n and ready.get(w, 0) == n for w, n in replicas.items())


def settled(emu: Any, replicas: Mapping[str, int]) -> bool:
    """The members converged and the bindings' aggregatedStatus says so (it lags)."""
    return converged_now(emu.timeline(), replicas) and bool(emu.bindings_report_ready())


Steps = dict[str, list[tuple[float, int]]]
CLUSTERS = ("cluster-a", "cluster-b")


def series(
    samples: list[Sample], start: float, end: float, clusters: tuple[str, ...] = CLUSTERS
) -> Steps:
    """Total ready replicas per cluster over time, as (t - start, ready) steps."""
    ready: dict[tuple[str, str], int] = {}
    totals = dict.fromkeys(clusters, 0)
    out: dict[str, list[tuple[float, int]]] = {c: [] for c in clusters}
    at_start: dict[str, int] | None = None
    for s in sorted(samples, key=lambda s: s["t"]):
        if s["t"] > end:
            break
        if s["t"] >= start and at_start is None:
            at_start = dict(totals)
        key = (s["workload"], s["cluster"])
        if s["cluster"] in totals:
            totals[s["cluster"]] += s["ready"] - ready.get(key, 0)
        ready[key] = s["ready"]
        if s["t"] >= start:
            for c in clusters:
                out[c].append((s["t"] - start, totals[c]))
    if at_start is None:
        at_start = dict(totals)
    for c in clusters:
        out[c].insert(0, (0.0, at_start[c]))
        out[c].append((end - start, totals[c]))
    return out


def workload_series(
    samples: list[Sample],
    workload: str,
    start: float,
    end: float,
    clusters: tuple[str, ...] = CLUSTERS,
) -> Steps:
    return series([s for s in samples if s["workload"] == workload], start, end, clusters)


def analyse(
    samples: list[Sample], replicas: Mapping[str, int], start: float, end: float, floor: Floor
) -> Availability:
    """Figures over [start, end] (simulated seconds): zero-ready workloads, workload-seconds
    below the floor, the lowest fleet-wide ready fraction, and the time to converge."""
    ordered = sorted(samples, key=lambda s: s["t"])
    ready: dict[str, dict[str, int]] = defaultdict(dict)
    total_desired = sum(replicas.values()) or 1
    i = 0
    while i < len(ordered) and ordered[i]["t"] < start:  # state at the start
        s = ordered[i]
        ready[s["workload"]][s["cluster"]] = s["ready"]
        i += 1
    result = Availability()
    below_since: dict[str, float] = {}
    zero: set[str] = set()
    last_change = start

    def evaluate(t: float) -> None:
        total = 0
        for w, n in replicas.items():
            per = ready.get(w, {})
            have = sum(per.values())
            total += have
            if n > 0 and have == 0:
                zero.add(w)
            if floor.below(per, n):
                below_since.setdefault(w, t)
            elif w in below_since:
                spent = t - below_since.pop(w)
                result.below_by_workload[w] = result.below_by_workload.get(w, 0.0) + spent
        result.lowest_ready_fraction = min(result.lowest_ready_fraction, total / total_desired)
        result.max_below_at_once = max(result.max_below_at_once, len(below_since))

    evaluate(start)
    while i < len(ordered) and ordered[i]["t"] <= end:
        t = ordered[i]["t"]
        while i < len(ordered) and ordered[i]["t"] - t < SIMULTANEOUS and ordered[i]["t"] <= end:
            s = ordered[i]
            ready[s["workload"]][s["cluster"]] = s["ready"]
            i += 1
        last_change = t
        evaluate(t)
    for w, since in below_since.items():
        result.below_by_workload[w] = result.below_by_workload.get(w, 0.0) + (end - since)
    result.zero_ready = sorted(zero)
    result.zero_ready_workloads = len(zero)
    result.below_floor_workload_seconds = sum(result.below_by_workload.values())
    result.converge_seconds = last_change - start
    if result.below_by_workload:
        result.worst_workload = max(result.below_by_workload.items(), key=lambda kv: kv[1])[0]
    return result


def lowest_workload_percent(
    samples: list[Sample], replicas: Mapping[str, int], start: float, end: float
) -> float:
    """The lowest ready share (percent of desired) any one workload had over [start, end]."""
    ready: dict[str, dict[str, int]] = defaultdict(dict)
    lowest = 100.0

    def check(workloads: Iterable[str]) -> float:
        out = 100.0
        for w in workloads:
            n = replicas.get(w, 0)
            if n > 0:
                out = min(out, 100.0 * sum(ready[w].values()) / n)
        return out

    ordered = sorted(samples, key=lambda s: s["t"])
    i = 0
    while i < len(ordered) and ordered[i]["t"] < start:
        ready[ordered[i]["workload"]][ordered[i]["cluster"]] = ordered[i]["ready"]
        i += 1
    lowest = check(replicas)
    while i < len(ordered) and ordered[i]["t"] <= end:
        t, touched = ordered[i]["t"], set()
        while i < len(ordered) and ordered[i]["t"] - t < SIMULTANEOUS and ordered[i]["t"] <= end:
            ready[ordered[i]["workload"]][ordered[i]["cluster"]] = ordered[i]["ready"]
            touched.add(ordered[i]["workload"])
            i += 1
        lowest = min(lowest, check(touched))
    return lowest


def peak_extra_held(
    samples: list[Sample], replicas: Mapping[str, int], start: float, end: float
) -> int:
    """The most replicas the members were told to run (the timeline's `assigned`, after
    overrides) beyond the workloads' desired replicas, at any instant of [start, end]: with one
    GPU per replica, the GPUs held beyond the steady state (terminating pods not counted)."""
    assigned: dict[tuple[str, str], int] = {}
    ordered = [s for s in sorted(samples, key=lambda s: s["t"]) if s["workload"] in replicas]
    desired = sum(replicas.values())
    total, i = 0, 0

    def take(s: Sample) -> int:
        key = (s["workload"], s["cluster"])
        change = int(s["assigned"]) - assigned.get(key, 0)
        assigned[key] = s["assigned"]
        return change

    while i < len(ordered) and ordered[i]["t"] < start:  # the state at the start
        total += take(ordered[i])
        i += 1
    peak = max(0, total - desired)
    while i < len(ordered) and ordered[i]["t"] <= end:
        t = ordered[i]["t"]
        while i < len(ordered) and ordered[i]["t"] - t < SIMULTANEOUS and ordered[i]["t"] <= end:
            total += take(ordered[i])
            i += 1
        peak = max(peak, total - desired)
    return peak
