"""Why a wave did not converge in time, from what the control plane shows: the workloads
still short of ready replicas per cluster, and the likely cause from each such cluster's
resource summary (pods Pending for want of a resource: allocating > 0 while allocatable minus
allocated is smaller than what a replica asks)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tidal.domain.prediction import parse_quantity
from tidal.karmada.views import ClusterView

Shortfall = tuple[str, dict[str, tuple[int, int]]]  # workload, cluster -> (ready, assigned)
MAX_LISTED = 5


def describe_shortfalls(stuck: Sequence[Shortfall]) -> str:
    """`not converged: ns/Kind/a (cluster-b: 3 of 5 not ready), ...`."""
    parts = []
    for name, clusters in stuck[:MAX_LISTED]:
        where = ", ".join(
            f"{c}: {assigned - ready} of {assigned} not ready"
            for c, (ready, assigned) in sorted(clusters.items())
        )
        parts.append(f"{name} ({where})")
    more = f" and {len(stuck) - MAX_LISTED} more" if len(stuck) > MAX_LISTED else ""
    return "not converged: " + ", ".join(parts) + more if parts else ""


def likely_cause(
    clusters: Sequence[str],
    cluster_objs: Sequence[Mapping[str, Any]],
    requests: Sequence[Mapping[str, float]],
) -> str:
    """The resources the clusters lack for the replicas waiting there, or a NotReady cluster."""
    by_name = {view.name: view for view in map(ClusterView, cluster_objs)}
    causes = []
    for name in clusters:
        cluster = by_name.get(name)
        if cluster is None:
            causes.append(f"cluster {name} is gone")
            continue
        if not cluster.ready:
            causes.append(f"cluster {name} is not Ready")
            continue
        short = []
        for resource, raw in sorted(cluster.summary("allocatable").items()):
            need = max((r.get(resource, 0.0) for r in requests), default=0.0)
            if need <= 0:
                continue
            allocatable = parse_quantity(raw)
            allocated = parse_quantity(cluster.summary("allocated").get(resource, 0))
            pending = parse_quantity(cluster.summary("allocating").get(resource, 0))
            if allocatable - allocated < need:
                short.append(
                    f"insufficient {resource} (allocatable {raw}, allocated "
                    f"{_num(allocated)}, asked by Pending pods {_num(pending)}, a "
                    f"replica needs {_num(need)})"
                )
        if short:
            causes.append(f"pods Pending in {name}: " + "; ".join(short))
    if not causes:
        return ""
    return (
        "likely cause: " + "; ".join(causes) + " (free capacity there, lower the "
        "replicas, or move fewer workloads to it)"
    )


def _num(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"
