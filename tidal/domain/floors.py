"""Floors: per-workload minimums of ready replicas that a switch must never go below.

A floor is either `clusters + minReadyReplicas` (in each listed cluster; `"*"` means each
cluster the workload is scheduled to both before and after the switch, the clusters it keeps)
or `minAvailablePercent` (ready across all clusters / spec.replicas). Workloads without
replicas (ConfigMaps) and with 0 replicas have nothing to count and are never held to a floor.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

EVERY_CLUSTER = "*"


@dataclass(frozen=True)
class FloorRule:
    clusters: tuple[str, ...] | None = None
    min_ready_replicas: int | None = None
    min_available_percent: float | None = None

    @classmethod
    def from_model(cls, floor: Any) -> FloorRule:
        """From a schedule Floor (or anything with the same three attributes)."""
        clusters = getattr(floor, "clusters", None)
        return cls(
            clusters=tuple(clusters) if clusters is not None else None,
            min_ready_replicas=getattr(floor, "min_ready_replicas", None),
            min_available_percent=getattr(floor, "min_available_percent", None),
        )

    @property
    def every_cluster(self) -> bool:
        return self.clusters == (EVERY_CLUSTER,)

    def named_clusters(self) -> tuple[str, ...]:
        return () if self.clusters is None or self.every_cluster else self.clusters

    def describe(self) -> str:
        if self.min_available_percent is not None:
            return f"minAvailablePercent {self.min_available_percent:g}"
        where = ",".join(self.clusters or ())
        return f"minReadyReplicas {self.min_ready_replicas} in [{where}]"


@dataclass(frozen=True)
class FloorViolation:
    workload: str
    cluster: str  # "*" for a percentage floor
    ready: int
    required: int
    floor: str

    def __str__(self) -> str:
        where = "across clusters" if self.cluster == EVERY_CLUSTER else f"in {self.cluster}"
        return (
            f"{self.workload}: {self.ready} ready {where}, floor needs {self.required} "
            f"({self.floor})"
        )


def required_available(replicas: int, percent: float) -> int:
    return math.ceil(replicas * percent / 100 - 1e-9)


def check_floors(
    workload: str,
    replicas: int | None,
    ready: Mapping[str, int],
    floors: Sequence[FloorRule],
    kept_clusters: Iterable[str] = (),
) -> list[FloorViolation]:
    """Every floor the workload breaks with `ready` replicas per cluster."""
    if not replicas:
        return []
    out: list[FloorViolation] = []
    kept = sorted(set(kept_clusters))
    for rule in floors:
        if rule.min_available_percent is not None:
            need = required_available(replicas, rule.min_available_percent)
            total = sum(ready.values())
            if total < need:
                out.append(FloorViolation(workload, EVERY_CLUSTER, total, need, rule.describe()))
            continue
        need = rule.min_ready_replicas or 0
        clusters = kept if rule.every_cluster else list(rule.named_clusters())
        for cluster in clusters:
            have = ready.get(cluster, 0)
            if have < need:
                out.append(FloorViolation(workload, cluster, have, need, rule.describe()))
    return out


def above_replicas(rule: FloorRule, replicas: int | None) -> bool:
    """A minReadyReplicas floor that asks more of a workload than it has replicas in all:
    it can never hold, before, during or after any switch."""
    need = rule.min_ready_replicas
    return bool(replicas) and need is not None and replicas is not None and need > replicas


def floor_clusters(floors: Sequence[FloorRule]) -> list[str]:
    """The clusters named by floors (not "*")."""
    return sorted({c for rule in floors for c in rule.named_clusters()})
