"""The general estimator with cluster resource models, per Karmada version (upstream cited)."""

from __future__ import annotations

from typing import Any

import pytest

from tidal_sim.controllers.estimator import general_estimate
from tidal_sim.controllers.webhook import default_resource_models
from tidal_sim.version import KarmadaVersion

ALL = list(KarmadaVersion)
MODELLED = [v for v in KarmadaVersion if v >= KarmadaVersion.V1_18]


def _cluster(
    models: list[dict[str, Any]] | None,
    counts: list[int] | None,
    allocatable: dict[str, str] | None = None,
) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "allocatable": allocatable or {"pods": "1000", "cpu": "100", "memory": "400Gi"}
    }
    if counts is not None:
        summary["allocatableModelings"] = [{"grade": g, "count": c} for g, c in enumerate(counts)]
    spec = {"resourceModels": models} if models is not None else {}
    return {"metadata": {"name": "m"}, "spec": spec, "status": {"resourceSummary": summary}}


def _grades(*rows: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    return [
        {"grade": i, "ranges": [{"name": n, "min": lo, "max": hi} for n, lo, hi in row]}
        for i, row in enumerate(rows)
    ]


CPU3 = _grades([("cpu", "0", "1")], [("cpu", "1", "2")], [("cpu", "2", "4")])
CPU_MEM3 = _grades(
    [("cpu", "0", "1"), ("memory", "0", "1Gi")],
    [("cpu", "1", "2"), ("memory", "1Gi", "2Gi")],
    [("cpu", "2", "4"), ("memory", "2Gi", "4Gi")],
)


@pytest.mark.parametrize("version", ALL)
@pytest.mark.parametrize(
    ("models", "request_", "expected"),
    [
        (CPU3, {"cpu": 1500}, 1),  # "Partially compliant grades"
        (CPU3, {"cpu": 3000}, 0),  # "No compliant grades"
        (CPU_MEM3, {"cpu": 1000, "memory": 1536 * 2**20}, 1),  # "Multi resource request"
        (CPU_MEM3, {"cpu": 1000, "memory": 2560 * 2**20}, 0),  # "request exceeds highest grade"
    ],
)
def test_models_estimate_in_every_version(
    version: KarmadaVersion, models: list[dict[str, Any]], request_: dict[str, int], expected: int
) -> None:
    """pkg/estimator/client/general_test.go TestGetMaximumReplicasBasedOnResourceModels
    (same answers at v1.17.0, v1.18.0 and master); one node per grade."""
    assert general_estimate(_cluster(models, [1, 1, 1]), request_, version) == expected


@pytest.mark.parametrize("version", ALL)
def test_no_models_falls_back_to_the_summary(version: KarmadaVersion) -> None:
    """general_test.go "No grade defined should result in an error": the error makes
    maxAvailableReplicas use the resourceSummary (100 cpu / 2 = 50)."""
    assert general_estimate(_cluster(None, [1]), {"cpu": 2000}, version) == 50


def test_gpu_request_against_default_models_v1_17_falls_back() -> None:
    """v1.17.0 general.go getMaximumReplicasBasedOnResourceModels: a resource missing from the
    models is an error, so the summary answers (8 GPUs / 1)."""
    cluster = _cluster(
        default_resource_models(),
        [0, 0, 0, 0, 0, 0, 0, 0, 4],
        {"pods": "1000", "cpu": "512", "memory": "4Ti", "nvidia.com/gpu": "8"},
    )
    assert general_estimate(cluster, {"nvidia.com/gpu": 1}, KarmadaVersion.V1_17) == 8


@pytest.mark.parametrize("version", MODELLED)
def test_gpu_request_against_default_models_is_zero_from_v1_18(version: KarmadaVersion) -> None:
    """v1.18.0+ buildModelNodes + SchedulingSimulator (util.Resource.MaxDivided): model nodes
    carry no nvidia.com/gpu, so nothing fits and there is no fallback."""
    cluster = _cluster(
        default_resource_models(),
        [0, 0, 0, 0, 0, 0, 0, 0, 4],
        {"pods": "1000", "cpu": "512", "memory": "4Ti", "nvidia.com/gpu": "8"},
    )
    assert general_estimate(cluster, {"nvidia.com/gpu": 1}, version) == 0


def test_gpu_models_schedule_gpu_workloads() -> None:
    """Topology-declared GPU grades: 2 nodes x 8 GPUs, 1 GPU each -> 16 (v1.18 node fit);
    with 8 cpu a replica the node minimum of 32 cpu fits 4 a node -> 8."""
    models = _grades(
        [("cpu", "32", "64"), ("memory", "256Gi", "512Gi"), ("nvidia.com/gpu", "8", "9")]
    )
    cluster = _cluster(
        models, [2], {"pods": "1000", "cpu": "64", "memory": "1Ti", "nvidia.com/gpu": "16"}
    )
    v18 = KarmadaVersion.V1_18
    assert general_estimate(cluster, {"nvidia.com/gpu": 1, "cpu": 2000}, v18) == 16
    assert general_estimate(cluster, {"nvidia.com/gpu": 1, "cpu": 8000}, v18) == 8


def test_per_node_fit_differs_between_v1_17_and_v1_18() -> None:
    """v1.17 getNodeAvailableReplicas counts at least 1 per node of the first compliant grade
    and has no 110-pod node cap; v1.18 fits whole replicas under 110 pods per node."""
    cluster = _cluster(CPU3, [0, 0, 1])  # one node with min cpu 2
    assert general_estimate(cluster, {"cpu": 100}, KarmadaVersion.V1_17) == 20
    assert general_estimate(cluster, {"cpu": 10}, KarmadaVersion.V1_17) == 200
    assert general_estimate(cluster, {"cpu": 10}, KarmadaVersion.V1_18) == 110


@pytest.mark.parametrize("version", ALL)
def test_no_pods_in_allocatable_gives_zero(version: KarmadaVersion) -> None:
    """general.go getAllowedPodNumber: allocatable without pods leaves 0 (general_test.go
    TestGetAllowedPodNumber "no allocatable pods")."""
    cluster = _cluster(None, None, {"cpu": "100", "memory": "1Ti"})
    assert general_estimate(cluster, {"cpu": 1000}, version) == 0
    assert general_estimate(cluster, {}, version) == 0


def test_summary_arithmetic_and_pods_budget() -> None:
    """general_test.go TestGetMaximumReplicasBasedOnClusterSummary / TestMaxAvailableReplicas:
    the scarcest resource and the pods left bound the answer; a missing resource gives 0."""
    cluster = _cluster(None, None, {"pods": "30", "cpu": "10", "memory": "100Gi"})
    both = {"cpu": 500, "memory": 10 * 2**30}
    assert general_estimate(cluster, both, KarmadaVersion.V1_18) == 10
    assert general_estimate(cluster, {"cpu": 100}, KarmadaVersion.V1_18) == 30
    assert general_estimate(cluster, {"nvidia.com/gpu": 1}, KarmadaVersion.V1_18) == 0


def test_models_gate_off_uses_the_summary() -> None:
    """general.go: without CustomizedClusterResourceModeling the models are ignored."""
    cluster = _cluster(CPU3, [0, 0, 1])
    # summary: 100 cpu / 10m = 10000, capped by the 1000 pods left
    assert (
        general_estimate(cluster, {"cpu": 10}, KarmadaVersion.V1_18, resource_modeling=False)
        == 1000
    )
