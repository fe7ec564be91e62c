"""The plan of a switch (pure): waves, predicted replicas per cluster, and the floor verdict.

Karmada moves replicas without surge: replicas leaving a cluster stop at once, replicas
arriving become ready only later. So while a wave is in flight each of its workloads is
counted with min(before, after) ready replicas per cluster; earlier waves are at their
predicted end state, later ones still at their current state. Every floor is checked for
every workload at the start, during each wave, and at the end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tidal.domain.floors import FloorRule, FloorViolation, check_floors
from tidal.domain.waves import Order, WorkloadKey, ordered, split_waves


@dataclass(frozen=True)
class PlannedWorkload:
    key: WorkloadKey
    replicas: int | None
    before: Mapping[str, int]
    after: Mapping[str, int]
    exact: bool = True
    problem: str = ""
    uid: str = ""

    @property
    def name(self) -> str:
        return str(self.key)

    def in_flight(self) -> dict[str, int]:
        """Ready replicas per cluster while moving: only those that stay are counted."""
        clusters = set(self.before) | set(self.after)
        return {c: min(self.before.get(c, 0), self.after.get(c, 0)) for c in sorted(clusters)}

    def kept_clusters(self) -> set[str]:
        return {c for c, n in self.before.items() if n > 0 and self.after.get(c, 0) > 0}

    @property
    def moves(self) -> bool:
        return {c: n for c, n in self.before.items() if n} != \
            {c: n for c, n in self.after.items() if n}


@dataclass(frozen=True)
class PlanStep:
    label: str  # "before", "wave 1", ..., "end"
    wave: int | None
    assigned: dict[str, int]  # predicted replicas per cluster after the step
    lowest_ready: dict[str, int]  # during the step: the lowest ready count of any workload
    violations: tuple[FloorViolation, ...] = ()


@dataclass(frozen=True)
class Plan:
    waves: list[list[PlannedWorkload]]
    steps: list[PlanStep]
    floors: tuple[FloorRule, ...]
    problems: list[str] = field(default_factory=list)  # unschedulable and the like

    @property
    def violations(self) -> list[tuple[str, FloorViolation]]:
        return [(s.label, v) for s in self.steps for v in s.violations]

    @property
    def safe(self) -> bool:
        return not self.violations and not self.problems

    @property
    def workloads(self) -> list[PlannedWorkload]:
        return [w for wave in self.waves for w in wave]

    def to_dict(self) -> dict[str, Any]:
        return {
            "safe": self.safe,
            "waves": [
                {"index": i, "workloads": [
                    {"workload": w.name, "replicas": w.replicas, "before": dict(w.before),
                     "after": dict(w.after), "exact": w.exact}
                    for w in wave]}
                for i, wave in enumerate(self.waves)],
            "steps": [
                {"step": s.label, "wave": s.wave, "assigned": s.assigned,
                 "lowestReady": s.lowest_ready,
                 "violations": [str(v) for v in s.violations]}
                for s in self.steps],
            "floors": [f.describe() for f in self.floors],
            "problems": list(self.problems),
        }


def _totals(states: Sequence[Mapping[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for state in states:
        for cluster, n in state.items():
            out[cluster] = out.get(cluster, 0) + n
    return dict(sorted(out.items()))


def _check(label: str, wave: int | None, workloads: Sequence[PlannedWorkload],
           ready: Sequence[Mapping[str, int]], assigned: Sequence[Mapping[str, int]],
           floors: Sequence[FloorRule], clusters: Sequence[str]) -> PlanStep:
    violations: list[FloorViolation] = []
    lowest: dict[str, int] = {}
    for w, r in zip(workloads, ready, strict=True):
        violations.extend(check_floors(w.name, w.replicas, r, floors, w.kept_clusters()))
        if w.replicas:
            for cluster in clusters:
                lowest[cluster] = min(lowest.get(cluster, r.get(cluster, 0)), r.get(cluster, 0))
    return PlanStep(label, wave, _totals(assigned), lowest, tuple(violations))


def make_plan(
    workloads: Sequence[PlannedWorkload],
    *,
    wave_size: int,
    floors: Sequence[FloorRule] = (),
    order: Order = "name",
) -> Plan:
    """Cut the workloads into waves and check every floor before, during and after each."""
    sorted_ = ordered(workloads, key=lambda w: w.key, replicas=lambda w: w.replicas, order=order)
    waves = split_waves(sorted_, wave_size) if sorted_ else []
    clusters = sorted({c for w in sorted_ for c in (*w.before, *w.after)})
    steps = [_check("before", None, sorted_, [w.before for w in sorted_],
                    [w.before for w in sorted_], floors, clusters)]
    position = {id(w): i for i, wave in enumerate(waves) for w in wave}
    for index in range(len(waves)):
        ready, assigned = [], []
        for w in sorted_:
            wave = position[id(w)]
            if wave < index:
                ready.append(dict(w.after))
                assigned.append(dict(w.after))
            elif wave == index:
                ready.append(w.in_flight())
                assigned.append(dict(w.after))
            else:
                ready.append(dict(w.before))
                assigned.append(dict(w.before))
        steps.append(_check(f"wave {index + 1}", index, sorted_, ready, assigned, floors,
                            clusters))
    steps.append(_check("end", None, sorted_, [w.after for w in sorted_],
                        [w.after for w in sorted_], floors, clusters))
    problems = [f"{w.name}: {w.problem}" for w in sorted_ if w.problem]
    return Plan(waves, steps, tuple(floors), problems)
