"""Floors: per-cluster minimums, "*" over the clusters a workload keeps, and percentages."""

from __future__ import annotations

from types import SimpleNamespace

from tidal.domain.floors import FloorRule, check_floors, floor_clusters


def test_named_cluster_floor_breaks_below_minimum() -> None:
    """One ready replica short in cluster-b is one violation naming cluster-b."""
    rule = FloorRule(clusters=("cluster-b",), min_ready_replicas=2)
    out = check_floors("n/Deployment/a", 5, {"cluster-a": 4, "cluster-b": 1}, [rule])
    assert [(v.cluster, v.ready, v.required) for v in out] == [("cluster-b", 1, 2)]


def test_absent_cluster_counts_as_zero() -> None:
    """A workload with nothing in a floor cluster breaks that floor."""
    rule = FloorRule(clusters=("cluster-b",), min_ready_replicas=1)
    assert check_floors("w", 1, {"cluster-a": 1}, [rule])[0].ready == 0


def test_every_cluster_floor_covers_kept_clusters_only() -> None:
    """ "*" holds the workload in the clusters it keeps, not the ones it leaves or joins."""
    rule = FloorRule(clusters=("*",), min_ready_replicas=1)
    assert check_floors("w", 4, {"a": 0, "b": 1}, [rule], kept_clusters=["b"]) == []
    assert len(check_floors("w", 4, {"a": 0, "b": 0}, [rule], kept_clusters=["b"])) == 1


def test_percent_floor_rounds_up() -> None:
    """75% of 5 replicas needs 4 ready across all clusters."""
    rule = FloorRule(min_available_percent=75)
    (violation,) = check_floors("w", 5, {"a": 2, "b": 1}, [rule])
    assert (violation.required, violation.ready, violation.cluster) == (4, 3, "*")
    assert check_floors("w", 5, {"a": 3, "b": 1}, [rule]) == []


def test_workloads_without_replicas_are_never_held() -> None:
    """A ConfigMap (no replicas) or a 0-replica workload has nothing to count."""
    rule = FloorRule(clusters=("b",), min_ready_replicas=1)
    assert check_floors("cm", None, {}, [rule]) == []
    assert check_floors("d", 0, {}, [rule]) == []


def test_from_model_and_cluster_listing() -> None:
    """A schedule Floor converts; floor_clusters lists named clusters, not "*"."""
    rules = [
        FloorRule.from_model(
            SimpleNamespace(clusters=["b", "a"], min_ready_replicas=1, min_available_percent=None)
        ),
        FloorRule(clusters=("*",), min_ready_replicas=1),
    ]
    assert floor_clusters(rules) == ["a", "b"]
    assert rules[0].describe() == "minReadyReplicas 1 in [b,a]"
