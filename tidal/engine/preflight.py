"""Preflight: refuse to start a switch that cannot be safe.

Policies exist (resolve already refuses otherwise; a swap is idempotent), the clusters
named in floors exist and are Ready, and every floor holds right now for every selected
workload (a switch must not begin below a floor: the wave gates would fail at once).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tidal.domain.floors import check_floors, floor_clusters
from tidal.engine.gates import ready_by_cluster
from tidal.engine.planning import SwitchPlan


@dataclass
class PreflightReport:
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def preflight(sp: SwitchPlan, ready_field: str | None = None) -> PreflightReport:
    report = PreflightReport()
    known = {c.name: c for c in sp.clusters}
    for name in floor_clusters(sp.floors):
        cluster = known.get(name)
        if cluster is None:
            report.problems.append(f"floor cluster {name} does not exist; fix the floor's "
                                   "clusters")
        elif not cluster.ready:
            report.problems.append(f"floor cluster {name} is not Ready; wait for it or "
                                   "postpone the switch")
    if not sp.plan.waves:
        return report  # nothing moves: no gate will watch the floors
    for w in sp.selection.workloads:
        current = w.current
        ready = ready_by_cluster(w.binding, ready_field)
        for v in check_floors(w.name, w.replicas, ready, sp.floors, set(current)):
            report.problems.append(f"floor does not hold now: {v}")
    return report


def ready_field_of(sp: SwitchPlan) -> str | None:
    for sel in sp.schedule.spec.workloads:
        if sel.ready_replicas_field:
            return sel.ready_replicas_field
    return None
