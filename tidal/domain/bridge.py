"""Bridges (pure): make-before-break for a workload whose destination has no member Work.

Karmada builds a member Work only for clusters a binding lists, and without
--enable-empty-workload-propagation a cluster assigned 0 replicas is not listed. So a 1-2
replica workload all in cluster-a by day has nothing in cluster-b an override could raise.
A bridge gives it one: while its policy is Lazy (trigger touch), the policy's placement is
set for a moment to Duplicated over every cluster the workload leaves or reaches, only its
templates are touched, and once every one of those clusters serves the full count the
window's placement is put back; the wave's usual touch then moves it, and the destination
keeps serving while the source's Work goes. It needs the room of the full count in each
cluster beyond what the workload has there already.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

DUPLICATED = "Duplicated"
# Placement fields that could keep a Duplicated placement off some of the bridge's clusters:
# the bridge names its clusters itself, and spreading across groups has nothing to divide.
_REPLACED = ("clusterAffinity", "clusterAffinities", "spreadConstraints", "replicaScheduling")


def listed(split: Mapping[str, int]) -> set[str]:
    """Clusters a binding with this split lists (and so has a member Work): those with
    replicas, or every cluster in it when 0-replica clusters are listed (empty workload
    propagation)."""
    if any(n == 0 for n in split.values()):
        return set(split)
    return {c for c, n in split.items() if n}


def needs_bridge(before: Mapping[str, int], after: Mapping[str, int]) -> bool:
    """A cluster the move adds replicas to has no member Work before it."""
    have = listed(before)
    return any(n > before.get(c, 0) and c not in have for c, n in after.items())


def bridge_clusters(before: Mapping[str, int], after: Mapping[str, int]) -> list[str]:
    """Every cluster the workload is in before or after the move."""
    return sorted({c for c, n in before.items() if n} | {c for c, n in after.items() if n})


def bridge_shares(replicas: int, clusters: Iterable[str]) -> dict[str, int]:
    """What a Duplicated placement over `clusters` assigns: the full count in each."""
    return {c: replicas for c in sorted(clusters)}


def bridge_growth(
    replicas: int, before: Mapping[str, int], clusters: Iterable[str]
) -> dict[str, int]:
    """Replicas the bridge adds per cluster beyond what the workload has there (its room)."""
    out = {c: replicas - before.get(c, 0) for c in sorted(clusters)}
    return {c: n for c, n in out.items() if n > 0}


def bridge_placement(
    placement: Mapping[str, Any] | None, clusters: Iterable[str]
) -> dict[str, Any]:
    """`placement` made Duplicated over exactly `clusters` (tolerations and every other field
    kept, the cluster choice and the replica division replaced)."""
    out = {k: copy.deepcopy(v) for k, v in (placement or {}).items() if k not in _REPLACED}
    out["clusterAffinity"] = {"clusterNames": sorted(set(clusters))}
    out["replicaScheduling"] = {"replicaSchedulingType": DUPLICATED}
    return out
