"""Preflight: refuse to start a switch that cannot be safe.

Policies exist (resolve already refuses otherwise; a swap is idempotent), the clusters
named in floors exist and are Ready, and every floor holds right now for every selected
workload (a switch must not begin below a floor: the wave gates would fail at once).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from tidal.domain.floors import above_replicas, check_floors, floor_clusters
from tidal.engine.gates import ready_by_cluster
from tidal.engine.planning import SwitchPlan


@dataclass
class PreflightReport:
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def unusable_floor_clusters(sp: SwitchPlan) -> dict[str, str]:
    """Floor clusters that do not exist or are not Ready, with the root-cause line of each:
    every breach in them is a symptom of that cause."""
    known = {c.name: c for c in sp.clusters}
    out = {}
    for name in floor_clusters(sp.floors):
        cluster = known.get(name)
        if cluster is None:
            out[name] = (
                f"floor cluster {name} does not exist (Clusters: "
                f"{', '.join(sorted(known)) or 'none'}); fix the floor's clusters"
            )
        elif not cluster.ready:
            out[name] = f"floor cluster {name} is not Ready; wait for it or postpone the switch"
    return out


def unattainable_floors(sp: SwitchPlan) -> dict[str, dict[str, int]]:
    """Per floor (as described in violations), the workloads whose replicas it exceeds, with
    their replicas: every breach of it by them is a symptom of the floor, not of the switch."""
    out: dict[str, dict[str, int]] = {}
    for rule in sp.floors:
        for w in sp.selection.workloads:
            if w.replicas is not None and above_replicas(rule, w.replicas):
                out.setdefault(rule.describe(), {})[w.name] = w.replicas
    return out


def _unattainable_lines(sp: SwitchPlan, explained: Counter[str]) -> list[str]:
    lines = []
    for floor, workloads in unattainable_floors(sp).items():
        lines.append(
            f"{sp.schedule.name}: floor {floor} is above the replicas of "
            f"{len(workloads)} workload(s) (largest: {max(workloads.values())}), so it "
            f"can never hold; lower minReadyReplicas or narrow the floor's clusters; "
            f"this explains {explained[floor]} floor breach(es), not listed"
        )
    return lines


def preflight(sp: SwitchPlan, ready_field: str | None = None) -> PreflightReport:
    """Root causes first (unusable floor clusters, each with the count of breaches it
    explains, which are not listed), then the floors that do not hold now."""
    report = PreflightReport()
    roots = unusable_floor_clusters(sp)
    unattainable = unattainable_floors(sp)
    explained = Counter(v.cluster for _, v in sp.plan.violations if v.cluster in roots)
    symptoms = {
        (v.floor, v.workload, v.cluster)
        for _, v in sp.plan.violations
        if v.workload in unattainable.get(v.floor, {})
    }
    now: list[str] = []
    if sp.plan.waves:  # else nothing moves: no gate will watch the floors
        for w in sp.selection.workloads:
            ready = ready_by_cluster(w.binding, ready_field)
            for v in check_floors(w.name, w.replicas, ready, sp.floors, set(w.current)):
                if v.cluster in roots:
                    explained[v.cluster] += 1
                elif w.name in unattainable.get(v.floor, {}):
                    symptoms.add((v.floor, v.workload, v.cluster))
                else:
                    now.append(f"floor does not hold now: {v}")
    report.problems.extend(_unattainable_lines(sp, Counter(f for f, _, _ in symptoms)))
    for name, line in roots.items():
        count = explained.get(name, 0)
        report.problems.append(
            line
            + (f"; this explains {count} floor breach(es) in {name}, not listed" if count else "")
        )
    report.problems.extend(now)
    return report


def ready_field_of(sp: SwitchPlan) -> str | None:
    for sel in sp.schedule.spec.workloads:
        if sel.ready_replicas_field:
            return sel.ready_replicas_field
    return None
