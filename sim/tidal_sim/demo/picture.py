"""The end of the demo: where each team's replicas started and ended, per cluster, with why a
split differs from the start, and the picture of the whole demo (one panel per team: ready
and desired replicas per cluster over simulated time from the emulator's timeline, the waves
of each window marked, the floors drawn; tidal.plot draws it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tidal.plot import Panel, Series, WaveSpan, draw, floor_lines
from tidal_sim.demo.tracking import Sample, Tracker

Split = dict[str, int]  # cluster -> ready replicas


def split_text(split: Mapping[str, int] | None) -> str:
    if not split:
        return "-"
    return ", ".join(f"{c} {n}" for c, n in sorted(split.items()))


@dataclass(frozen=True)
class TeamSplit:
    schedule: str
    start: Split
    after: dict[str, Split]  # window -> ready per cluster when its switch finished
    why: str

    @property
    def end(self) -> Split | None:
        return list(self.after.values())[-1] if self.after else None

    def to_json(self) -> dict[str, Any]:
        return {
            "schedule": self.schedule,
            "start": self.start,
            "after": self.after,
            "end": self.end,
            "why": self.why,
        }


def why(
    schedule: str, start: Split, end: Split | None, *, dynamic: bool, team_limited: bool
) -> str:
    """One sentence: why the last switch left the team where it did, against its start."""
    if end is None:
        return f"{schedule} did not finish a switch"
    clusters = set(start) | set(end)
    if all(start.get(c, 0) == end.get(c, 0) for c in clusters):
        return f"{schedule} ends where it started: the last window puts its start placement back"
    if dynamic:
        limit = (
            ", by Karmada's general estimator alone (the team estimator's limits apply "
            "from the team's first window on)"
            if team_limited
            else ""
        )
        return (
            f"{schedule} ends at {split_text(end)}, not its start's {split_text(start)}: "
            "its policy divides replicas by each cluster's free capacity (dynamicWeight: "
            "AvailableReplicas), so each wave of the last switch got the split of what was "
            "free when it was rescheduled, while the start's split was made when the "
            f"workloads were first placed{limit}"
        )
    return (
        f"{schedule} ends at {split_text(end)}, not its start's {split_text(start)}: "
        "its policy divides replicas by each cluster's free capacity (dynamicWeight: "
        "AvailableReplicas), so each wave got the split of the capacity free when it "
        f"was rescheduled, the start's by the capacity free when it was first placed"
        f"{limit}"
    )
    return (
        f"{schedule} ends at {split_text(end)}, not its start's {split_text(start)}: the "
        "policy in force after the last window divides its replicas differently from the "
        "one in force at the start"
    )


def team_splits(
    tracker: Tracker,
    start: Mapping[str, Split],
    dynamic: Mapping[str, bool],
    team_limited: Mapping[str, bool],
) -> list[TeamSplit]:
    out = []
    for schedule in dict.fromkeys(r.planned.schedule for r in tracker.runs):
        after = {
            r.planned.window: dict(r.ready_after)
            for r in tracker.runs
            if r.planned.schedule == schedule and r.ready_after is not None
        }
        first = dict(start.get(schedule, {}))
        for split in after.values():  # a cluster the team reaches later: none there at first
            for cluster in split:
                first.setdefault(cluster, 0)
        end = list(after.values())[-1] if after else None
        out.append(
            TeamSplit(
                schedule,
                dict(sorted(first.items())),
                after,
                why(
                    schedule,
                    first,
                    end,
                    dynamic=dynamic.get(schedule, False),
                    team_limited=team_limited.get(schedule, False),
                ),
            )
        )
    return out


LEAD = 10.0  # simulated seconds shown before a window's start
TAIL = 20.0  # and after its switch ended


def team_series(
    samples: Iterable[Sample], members: set[str], t0: float, t1: float
) -> tuple[Series, ...]:
    """Ready and desired (assigned) per cluster summed over a team, at each change within
    [t0, t1] (seconds since t0; what held at t0 as its first point, the last held to t1)."""
    latest: dict[tuple[str, str], tuple[int, int]] = {}
    points: dict[str, list[tuple[float, int, int]]] = {}

    def put(cluster: str, t: float) -> None:
        ready = sum(v[0] for (_, c), v in latest.items() if c == cluster)
        desired = sum(v[1] for (_, c), v in latest.items() if c == cluster)
        pts = points.setdefault(cluster, [])
        if pts and pts[-1][0] == t:
            pts[-1] = (t, ready, desired)
        else:
            pts.append((t, ready, desired))

    for s in sorted(samples, key=lambda s: float(s["t"])):
        if s["workload"] not in members or float(s["t"]) > t1:
            continue
        latest[(str(s["workload"]), str(s["cluster"]))] = (int(s["ready"]), int(s["assigned"]))
        put(str(s["cluster"]), round(max(0.0, float(s["t"]) - t0), 1))
    for cluster in points:
        put(cluster, round(t1 - t0, 1))  # held to the right edge
    return tuple(Series(c, tuple(points[c])) for c in sorted(points))


def draw_demo(path: Path, tracker: Tracker, samples: list[Sample], end: float) -> Path:
    """One panel per team and window (rows: teams, columns: windows), each from shortly
    before the window's start to shortly after its switch ended, in simulated seconds."""
    panels = []
    schedules = list(dict.fromkeys(r.planned.schedule for r in tracker.runs))
    columns = max(sum(1 for r in tracker.runs if r.planned.schedule == s) for s in schedules)
    for schedule in schedules:
        for run in [r for r in tracker.runs if r.planned.schedule == schedule]:
            start = run.started if run.started is not None else run.planned.at.timestamp()
            t0 = start - LEAD
            t1 = (run.finished if run.finished is not None else end) + TAIL
            series = team_series(samples, tracker.members.get(schedule, set()), t0, t1)
            spans = tuple(
                WaveSpan(
                    f"w{index}", began - t0, (finished if finished is not None else t1) - t0, result
                )
                for index, began, finished, result in run.wave_spans
            )
            lines, notes = floor_lines(run.floors)
            panels.append(
                Panel(f"{schedule} {run.planned.window}: {run.state}", series, lines, spans, notes)
            )
    return draw(
        path,
        panels,
        columns=columns,
        xlabel="simulated seconds (the window starts at 10)",
        title="tidal demo: replicas per cluster, ready (solid) and desired (dashed)",
    )
