"""Prediction: static weights exact by Webster, dynamic weights estimated from capacity."""

from __future__ import annotations

import pytest

from tidal.domain.karmada_release import KarmadaRelease
from tidal.domain.prediction import (
    ClusterFacts,
    ModelNodes,
    Predictor,
    WorkloadFacts,
    available_replicas,
    candidates,
    frees_a_grade,
    graded_replicas,
    models_lack,
    parse_quantity,
    placement_mode,
)

A = ClusterFacts("cluster-a", free={"cpu": 4.0, "pods": 100})
B = ClusterFacts("cluster-b", free={"cpu": 8.0, "pods": 100})


def _static(*pairs: tuple[str, int]) -> dict[str, object]:
    return {
        "clusterAffinity": {"clusterNames": ["cluster-a", "cluster-b"]},
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {
                "staticWeightList": [
                    {"targetCluster": {"clusterNames": [name]}, "weight": w} for name, w in pairs
                ]
            },
        },
    }


def test_quantities_parse() -> None:
    """Kubernetes quantities in milli, decimal and binary suffixes."""
    assert parse_quantity("500m") == 0.5
    assert parse_quantity("2Gi") == 2 * 2**30
    assert parse_quantity("3k") == 3000
    assert parse_quantity(7) == 7.0


def test_static_80_20_over_five_is_four_one() -> None:
    """Webster over weights 4:1 and 5 replicas gives 4 and 1 (worked by hand)."""
    p = Predictor(_static(("cluster-a", 4), ("cluster-b", 1)), [A, B])
    result = p.predict(WorkloadFacts("w", "uid-1", 5))
    assert result.assignment == {"cluster-a": 4, "cluster-b": 1}
    assert result.exact


def test_static_list_without_a_cluster_gives_it_nothing() -> None:
    """0/100: a cluster absent from the staticWeightList gets no replicas."""
    p = Predictor(_static(("cluster-b", 1)), [A, B])
    assert p.predict(WorkloadFacts("w", "uid", 5)).assignment == {"cluster-b": 5}


def test_not_ready_and_excluded_clusters_are_not_candidates() -> None:
    """Affinity names, exclude and readiness narrow the candidates."""
    down = ClusterFacts("cluster-c", ready=False)
    placement = {
        "clusterAffinity": {
            "clusterNames": ["cluster-a", "cluster-b", "cluster-c"],
            "exclude": ["cluster-a"],
        }
    }
    assert candidates(placement, [A, B, down]) == ["cluster-b"]


def test_duplicated_gives_every_candidate_all_replicas() -> None:
    """Duplicated (or no replicaScheduling) copies the replicas to each cluster."""
    p = Predictor({"clusterAffinity": {"clusterNames": ["cluster-a", "cluster-b"]}}, [A, B])
    assert p.mode == "duplicated"
    assert p.predict(WorkloadFacts("w", "u", 2)).assignment == {"cluster-a": 2, "cluster-b": 2}


_DYNAMIC = {
    "replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {"dynamicWeight": "AvailableReplicas"},
    }
}


def test_dynamic_estimate_deducts_capacity_between_waves() -> None:
    """Dynamic weights follow free capacity, and each wave's placements use some of it up
    for the waves after it."""
    assert placement_mode(_DYNAMIC) == "dynamic"
    p = Predictor(_DYNAMIC, [A, B])
    first = p.predict(WorkloadFacts("w1", "u1", 6, request={"cpu": 1.0}))
    assert sum(first.assignment.values()) == 6
    assert not first.exact
    p.next_wave()
    second = p.predict(WorkloadFacts("w2", "u2", 6, request={"cpu": 1.0}))
    assert sum(second.assignment.values()) == 6
    p.next_wave()
    third = p.predict(WorkloadFacts("w3", "u3", 6, request={"cpu": 1.0}))
    assert third.problem.startswith("unschedulable")


def test_one_wave_is_estimated_from_the_capacity_at_its_start() -> None:
    """pkg/estimator/client/general.go maxAvailableReplicas reads the Cluster's
    resourceSummary, refreshed every 10 s (cluster_status_controller.go), and deducts in-flight
    placements only under the alpha gate SchedulingOvercommitProtection: the bindings of one
    wave all see the same free capacity, so each splits 4 cpu : 8 cpu alike."""
    p = Predictor(_DYNAMIC, [A, B])
    splits = [
        p.predict(WorkloadFacts(f"w{i}", f"u{i}", 3, request={"cpu": 1.0})).assignment
        for i in range(3)
    ]
    assert splits == [{"cluster-a": 1, "cluster-b": 2}] * 3


def test_available_replicas_is_the_tightest_resource() -> None:
    """Available replicas is the minimum over the requested resources and pods."""
    assert (
        available_replicas({"cpu": 4.0, "memory": 2.0, "pods": 10}, {"cpu": 1.0, "memory": 1.0})
        == 2
    )


def test_cluster_facts_from_a_cluster_object() -> None:
    """Free capacity is allocatable minus allocated and allocating; Ready from conditions."""
    obj = {
        "metadata": {"name": "c", "labels": {"zone": "z"}},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "resourceSummary": {
                "allocatable": {"cpu": "8", "memory": "16Gi"},
                "allocated": {"cpu": "2500m"},
                "allocating": {"cpu": "500m"},
            },
        },
    }
    facts = ClusterFacts.from_cluster(obj)
    assert facts.ready and facts.labels == {"zone": "z"}
    assert facts.free["cpu"] == 5.0


def _models(*rows: dict[str, str], counts: list[int]) -> dict[str, object]:
    """A Cluster object with resource models (one grade per row) and node counts per grade."""
    return {
        "metadata": {"name": "m"},
        "spec": {
            "resourceModels": [
                {
                    "grade": g,
                    "ranges": [{"name": n, "min": lo, "max": "1000Ti"} for n, lo in row.items()],
                }
                for g, row in enumerate(rows)
            ]
        },
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "resourceSummary": {
                "allocatable": {
                    "cpu": "100",
                    "memory": "400Gi",
                    "pods": "1000",
                    "nvidia.com/gpu": "64",
                },
                "allocatableModelings": [{"grade": g, "count": c} for g, c in enumerate(counts)],
            },
        },
    }


def test_resource_models_answer_upstream_worked_cases() -> None:
    """pkg/estimator/client/general_test.go TestGetMaximumReplicasBasedOnResourceModels:
    "Partially compliant grades" (1.5 cpu -> 1), "No compliant grades" (3 cpu -> 0),
    "Multi resource request" (1 cpu + 1.5Gi -> 1), "request exceeds highest grade" (-> 0)."""
    cpu = ClusterFacts.from_cluster(
        _models({"cpu": "0"}, {"cpu": "1"}, {"cpu": "2"}, counts=[1, 1, 1])
    )
    assert available_replicas(cpu.free, {"cpu": 1.5}, cpu.model_nodes) == 1
    assert available_replicas(cpu.free, {"cpu": 3.0}, cpu.model_nodes) == 0
    both = ClusterFacts.from_cluster(
        _models(
            {"cpu": "0", "memory": "0"},
            {"cpu": "1", "memory": "1Gi"},
            {"cpu": "2", "memory": "2Gi"},
            counts=[1, 1, 1],
        )
    )
    assert available_replicas(both.free, {"cpu": 1.0, "memory": 1.5 * 2**30}, both.model_nodes) == 1
    assert available_replicas(both.free, {"cpu": 1.0, "memory": 2.5 * 2**30}, both.model_nodes) == 0


def test_a_resource_the_models_lack_gives_zero() -> None:
    """v1.18+ general.go buildModelNodes: a GPU request against cpu/memory models fits no
    node, with no fallback to the summary's 64 GPUs."""
    facts = ClusterFacts.from_cluster(_models({"cpu": "128", "memory": "1Ti"}, counts=[4]))
    assert available_replicas(facts.free, {"nvidia.com/gpu": 1.0}, facts.model_nodes) == 0


V17, V18, V19 = KarmadaRelease.V1_17, KarmadaRelease.V1_18, KarmadaRelease.V1_19


def test_v1_17_model_estimate_answers_upstream_worked_cases() -> None:
    """v1.17.0 pkg/estimator/client/general_test.go TestGetMaximumReplicasBasedOnResourceModels:
    "No grade defined should result in an error" (None: the summary answers), "Partially
    compliant grades" (1.5 cpu -> 1), "No compliant grades" (3 cpu -> 0), "Multi resource
    request" (1 cpu + 1.5Gi -> 1), "request exceeds highest grade" (2.5Gi -> 0)."""
    assert graded_replicas((), {"cpu": 1.0}) is None
    cpu = ClusterFacts.from_cluster(
        _models({"cpu": "0"}, {"cpu": "1"}, {"cpu": "2"}, counts=[1, 1, 1])
    ).model_nodes
    assert graded_replicas(cpu, {"cpu": 1.5}) == 1
    assert graded_replicas(cpu, {"cpu": 3.0}) == 0
    both = ClusterFacts.from_cluster(
        _models(
            {"cpu": "0", "memory": "0"},
            {"cpu": "1", "memory": "1Gi"},
            {"cpu": "2", "memory": "2Gi"},
            counts=[1, 1, 1],
        )
    ).model_nodes
    assert graded_replicas(both, {"cpu": 1.0, "memory": 1.5 * 2**30}) == 1
    assert graded_replicas(both, {"cpu": 1.0, "memory": 2.5 * 2**30}) == 0


def test_v1_17_model_nodes_have_no_pod_cap() -> None:
    """v1.17.0 general_test.go TestGetNodeAvailableReplicas "CPU resource calculation in
    millicores" (2 cpu / 500m -> 4 a node); v1.17 has no per-node pod cap, while v1.18's model
    nodes (buildModelNodes) hold at most 110 pods each."""
    one = ClusterFacts.from_cluster(_models({"cpu": "2"}, counts=[3]))
    assert available_replicas(one.free, {"cpu": 0.5}, one.model_nodes, V18) == 12
    assert available_replicas(one.free, {"cpu": 0.5}, one.model_nodes, V17) == 12
    assert available_replicas(one.free, {"cpu": 0.01}, one.model_nodes, V17) == 600
    assert available_replicas(one.free, {"cpu": 0.01}, one.model_nodes, V18) == 330


@pytest.mark.parametrize("release", [V18, V19])
def test_gpu_against_cpu_memory_models_is_zero_from_v1_18(release: KarmadaRelease) -> None:
    """v1.18.0 general.go buildModelNodes: model nodes carry only the models' resources, so a
    GPU request fits none of them and the summary's 64 GPUs are not consulted."""
    facts = ClusterFacts.from_cluster(_models({"cpu": "128", "memory": "1Ti"}, counts=[4]))
    assert available_replicas(facts.free, {"nvidia.com/gpu": 1.0}, facts.model_nodes, release) == 0


def test_gpu_against_cpu_memory_models_falls_back_to_the_summary_in_v1_17() -> None:
    """v1.17.0 general.go: getMaximumReplicasBasedOnResourceModels errors ("resource model is
    inapplicable as missing resource") and maxAvailableReplicas uses the summary: 64 GPUs."""
    facts = ClusterFacts.from_cluster(_models({"cpu": "128", "memory": "1Ti"}, counts=[4]))
    assert available_replicas(facts.free, {"nvidia.com/gpu": 1.0}, facts.model_nodes, V17) == 64


@pytest.mark.parametrize(
    ("release", "split"), [(V17, {"cluster-a": 1, "cluster-b": 3}), (V18, None)]
)
def test_predictor_follows_the_release(
    release: KarmadaRelease, split: dict[str, int] | None
) -> None:
    """A GPU DynamicWeight workload over two clusters with cpu/memory models only: v1.17 splits
    by the summaries' 16 and 48 free GPUs, v1.18 finds no room (Unschedulable)."""

    def gpu_cluster(name: str, gpus: str) -> ClusterFacts:
        obj = _models({"cpu": "128", "memory": "1Ti"}, counts=[4])
        obj["metadata"] = {"name": name}
        obj["status"]["resourceSummary"]["allocatable"]["nvidia.com/gpu"] = gpus  # type: ignore[index]
        return ClusterFacts.from_cluster(obj)

    p = Predictor(
        _DYNAMIC, [gpu_cluster("cluster-a", "16"), gpu_cluster("cluster-b", "48")], release
    )
    result = p.predict(WorkloadFacts("w", "u", 4, request={"nvidia.com/gpu": 1.0}))
    if split is None:
        assert result.problem == (
            "unschedulable: Clusters available replicas 0 are not enough to schedule."
        )
    else:
        assert result.assignment == split


def _gpu_grades(*gpus: str, counts: list[int]) -> tuple[ModelNodes, ...]:
    rows = [
        {"cpu": str(4 * int(g)), "memory": f"{16 * int(g)}Gi", "nvidia.com/gpu": g} for g in gpus
    ]
    return ClusterFacts.from_cluster(_models(*rows, counts=counts)).model_nodes


INFERENCE = {"cpu": 4.0, "memory": 16.0 * 2**30, "nvidia.com/gpu": 1.0}


def test_replicas_leaving_add_room_only_where_grades_are_one_replica_wide() -> None:
    """pkg/modeling/modeling.go getIndex grades each node by its free resources
    (cluster_status_controller.go getAllocatableModelings): a replica given back lifts its node
    a grade when grades are one replica apart (one GPU, 4 cpu, 16Gi), but not under grades
    0-19 / 20-31 / 32+ GPUs, where a node with 2 free GPUs stays at grade 0 (room for none)."""
    fine = _gpu_grades("0", "1", "2", "3", counts=[3, 0, 0, 1])
    assert frees_a_grade(fine, INFERENCE)
    free = {"pods": 100.0}
    assert available_replicas(free, INFERENCE, fine) == 3
    assert available_replicas(free, INFERENCE, fine, placed=-2) == 5
    coarse = _gpu_grades("0", "20", "32", counts=[8, 0, 0])
    assert not frees_a_grade(coarse, INFERENCE)
    assert available_replicas(free, INFERENCE, coarse, placed=-2) == 0
    assert available_replicas(free, INFERENCE, fine, placed=2) == 1  # placed: always taken


def test_no_pods_in_allocatable_gives_zero() -> None:
    """general.go getAllowedPodNumber: no pods allocatable means no replica fits
    (general_test.go TestGetAllowedPodNumber "no allocatable pods")."""
    assert available_replicas({"cpu": 100.0}, {"cpu": 1.0}) == 0
    assert available_replicas({"cpu": 100.0}, {}) == 0


def test_not_ready_cluster_in_use_keeps_its_static_share() -> None:
    """The taint filter skips clusters in spec.clusters
    (pkg/scheduler/framework/plugins/tainttoleration): a NotReady cluster the binding uses
    keeps its Webster share; one it does not use gets nothing."""
    down = ClusterFacts("cluster-a", ready=False, free={"cpu": 4.0, "pods": 100})
    p = Predictor(_static(("cluster-a", 4), ("cluster-b", 1)), [down, B])
    kept = p.predict(WorkloadFacts("w", "uid-1", 5, current={"cluster-a": 4, "cluster-b": 1}))
    assert kept.assignment == {"cluster-a": 4, "cluster-b": 1}
    assert p.predict(WorkloadFacts("v", "uid-2", 5)).assignment == {"cluster-b": 5}


def test_static_moves_that_do_not_fit_are_reported_per_cluster() -> None:
    """Static weights ignore capacity: replicas moved beyond the destination's free cpu
    (8 cpu, 2 already taken by the first workload) are reported with what is missing."""
    p = Predictor(_static(("cluster-b", 1)), [A, B])
    first = p.predict(WorkloadFacts("w1", "u1", 4, current={"cluster-a": 4}, request={"cpu": 1.5}))
    assert first.short == {}
    second = p.predict(WorkloadFacts("w2", "u2", 4, current={"cluster-a": 4}, request={"cpu": 1.0}))
    assert second.short == {"cluster-b": {"cpu": 2.0}}
    assert second.pending == {"cluster-b": 2}  # 2 of the 4 fit in the 2 cpu left


def test_models_lack_names_the_resources_no_grade_measures() -> None:
    """A GPU request against models grading only cpu and memory: nvidia.com/gpu is named; a
    cluster without models lacks nothing (the summary answers)."""
    graded = ClusterFacts("a", model_nodes=(ModelNodes(2, {"cpu": 8.0, "memory": 2.0**35}),))
    request = {"cpu": 1.0, "nvidia.com/gpu": 1.0, "pods": 1.0}
    assert models_lack(graded, request) == ["nvidia.com/gpu"]
    assert models_lack(ClusterFacts("b"), request) == []
