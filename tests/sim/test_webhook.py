"""Admission defaults the emulator applies as Karmada's apiserver and webhooks do (cited)."""

from __future__ import annotations

from tests.sim.karmada_harness import TWO, Harness
from tidal_sim.controllers.common import CPP_ID_LABEL, PP_ID_LABEL


def test_divided_without_preference_defaults_to_weighted_and_divides_equally() -> None:
    """pkg/util/helper/policy.go SetReplicaDivisionPreferenceWeighted (called by
    pkg/webhook/clusterpropagationpolicy/mutating.go); CRD default replicaSchedulingType Divided."""
    h = Harness()
    h.cluster("a")
    h.cluster("b")
    h.cpp("split", {**TWO, "replicaScheduling": {"replicaSchedulingType": "Divided"}})
    h.cpp(
        "bare",
        {**TWO, "replicaScheduling": {}},
        selectors=[{"apiVersion": "apps/v1", "kind": "Deployment", "name": "other"}],
    )
    h.deployment("web", 4)
    h.settle()
    for name in ("split", "bare"):
        rs = h.get("ClusterPropagationPolicy", name)["spec"]["placement"]["replicaScheduling"]
        assert rs == {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}
    assert h.clusters_of("web") == {"a": 2, "b": 2}


def test_duplicated_is_left_alone() -> None:
    """SetReplicaDivisionPreferenceWeighted only touches Divided placements."""
    h = Harness()
    h.cpp("dup", {**TWO, "replicaScheduling": {"replicaSchedulingType": "Duplicated"}})
    rs = h.get("ClusterPropagationPolicy", "dup")["spec"]["placement"]["replicaScheduling"]
    assert "replicaDivisionPreference" not in rs


def test_crd_defaults_and_spread_defaults() -> None:
    """crds/policy.karmada.io_clusterpropagationpolicies.yaml defaults (priority 0,
    conflictResolution Abort, preemption Never, schedulerName) and
    pkg/util/helper/policy.go SetDefaultSpreadConstraints (spreadByField cluster, minGroups 1)."""
    h = Harness()
    h.cpp("p", {**TWO, "spreadConstraints": [{"maxGroups": 2}]})
    spec = h.get("ClusterPropagationPolicy", "p")["spec"]
    assert (spec["priority"], spec["conflictResolution"], spec["preemption"]) == (
        0,
        "Abort",
        "Never",
    )
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["placement"]["spreadConstraints"] == [
        {"maxGroups": 2, "spreadByField": "cluster", "minGroups": 1}
    ]


def test_permanent_id_is_new_on_create_and_kept_on_update() -> None:
    """pkg/webhook/propagationpolicy/mutating.go: on Create the permanent-id label is set to a
    new UUID (util.MergeLabel overwrites whatever the request carried)."""
    h = Harness()
    h.store.create(
        h.t("PropagationPolicy"),
        {
            "metadata": {"name": "p", "namespace": "team", "labels": {PP_ID_LABEL: "mine"}},
            "spec": {
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "placement": TWO,
            },
        },
    )
    first = h.get("PropagationPolicy", "p", "team")
    assert first["metadata"]["labels"][PP_ID_LABEL] not in ("", "mine")
    assert first["spec"]["resourceSelectors"][0]["namespace"] == "team"  # webhook default
    h.patch("PropagationPolicy", "p", lambda o: o["spec"].update(priority=3), "team")
    again = h.get("PropagationPolicy", "p", "team")
    assert again["metadata"]["labels"][PP_ID_LABEL] == first["metadata"]["labels"][PP_ID_LABEL]
    assert CPP_ID_LABEL in h.cpp("c", TWO)["metadata"]["labels"]


def test_new_cluster_gets_the_default_resource_models() -> None:
    """pkg/apis/cluster/mutation/mutation.go SetDefaultClusterResourceModels: nine cpu/memory
    grades, grade 1 = cpu [1,2) memory [4Gi,16Gi), the last unbounded."""
    h = Harness()
    models = h.cluster("a")["spec"]["resourceModels"]
    assert [m["grade"] for m in models] == list(range(9))
    assert models[1]["ranges"] == [
        {"name": "cpu", "min": "1", "max": "2"},
        {"name": "memory", "min": "4Gi", "max": "16Gi"},
    ]
    assert models[8]["ranges"][0]["min"] == "128"
