"""Why a planned switch must not start: the preflight's root causes, then every floor the
plan breaks and every plan problem (PlanRefused carries them; nothing was written)."""

from __future__ import annotations

from tidal.engine.planning import SwitchPlan
from tidal.engine.preflight import preflight, unattainable_floors, unusable_floor_clusters


class PlanRefused(Exception):
    """The plan would break a floor (or cannot be scheduled): nothing was written."""

    def __init__(self, plan: SwitchPlan, problems: list[str]) -> None:
        more = f"; ... and {len(problems) - 5} more" if len(problems) > 5 else ""
        super().__init__("; ".join(problems[:5]) + more)
        self.plan = plan
        self.problems = problems


def plan_problems(sp: SwitchPlan) -> list[str]:
    """Every floor violation (once, at the first step it shows) and every plan problem;
    breaches in a floor cluster that is missing or not Ready, or of a floor above the
    workload's replicas, are the preflight's root causes, not listed here."""
    seen: set[str] = set()
    problems = []
    unusable = unusable_floor_clusters(sp)
    unattainable = unattainable_floors(sp)
    for label, v in sp.plan.violations:
        if v.cluster in unusable or v.workload in unattainable.get(v.floor, {}):
            continue
        if str(v) not in seen:
            seen.add(str(v))
            problems.append(f"{label}: {v}")
    problems.extend(sp.plan.problems)
    problems.extend(sp.refusals)
    return problems


def refusal_problems(sp: SwitchPlan, ready_field: str | None) -> list[str]:
    """Root causes first (preflight), then the plan's own problems; empty: may start."""
    return preflight(sp, ready_field).problems + plan_problems(sp)
