"""Cluster readiness as the scheduler sees it: taints rendered as upstream renders them."""

from __future__ import annotations

import pytest

from tidal_sim.controllers.assignment import FitError, filter_clusters
from tidal_sim.controllers.common import cluster_ready


def _cluster(name: str, ready: str | None) -> dict[str, object]:
    status = {} if ready is None else {"conditions": [{"type": "Ready", "status": ready}]}
    return {"metadata": {"name": name}, "spec": {}, "status": status}


@pytest.mark.parametrize(
    ("ready", "taint"),
    [
        (None, "cluster.karmada.io/not-ready:NoSchedule"),
        ("False", "cluster.karmada.io/not-ready:NoSchedule"),
        ("Unknown", "cluster.karmada.io/unreachable:NoSchedule"),
    ],
)
def test_not_ready_clusters_are_filtered_naming_the_taint(ready: str | None, taint: str) -> None:
    """pkg/controllers/cluster/cluster_controller.go taintClusterByCondition (no Ready
    condition: the not-ready taint) and corev1.Taint.ToString (`key:effect` when no value)."""
    with pytest.raises(FitError) as err:
        filter_clusters({"m": _cluster("m", ready)}, {}, {}, None)
    assert f"cluster(s) had untolerated taint {{{taint}}}" in str(err.value)


def test_a_cluster_the_binding_uses_is_kept_whatever_its_taints() -> None:
    """pkg/scheduler/framework/plugins/tainttoleration: clusters in spec.clusters are not
    filtered by taints."""
    assert filter_clusters({"m": _cluster("m", "False")}, {}, {"m": 1}, None) == ["m"]


def test_ready_means_a_true_ready_condition() -> None:
    """pkg/util/cluster.go IsClusterReady: only Ready=True; no condition is not ready."""
    assert cluster_ready(_cluster("m", "True"))
    assert not cluster_ready(_cluster("m", None))
    assert not cluster_ready(_cluster("m", "Unknown"))
