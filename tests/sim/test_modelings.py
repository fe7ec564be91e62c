"""allocatableModelings of an emulated member: nodes counted per resource-model grade."""

from __future__ import annotations

from typing import Any

from tidal_sim.controllers.modelings import allocatable_modelings
from tidal_sim.controllers.quantity import resource_list

# pkg/modeling/modeling_test.go TestGetIndex: grade 0 cpu [0,1) memory [0,1024),
# grade 1 cpu [1m,2) memory [1024m,2048)
MODELS = [
    {
        "grade": 0,
        "ranges": [
            {"name": "cpu", "min": "0", "max": "1"},
            {"name": "memory", "min": "0", "max": "1024"},
        ],
    },
    {
        "grade": 1,
        "ranges": [
            {"name": "cpu", "min": "1m", "max": "2"},
            {"name": "memory", "min": "1024m", "max": "2048"},
        ],
    },
]


def _cluster(nodes: int) -> dict[str, Any]:
    return {
        "metadata": {"name": "m", "annotations": {"sim.tidal.io/nodes": str(nodes)}},
        "spec": {"resourceModels": MODELS},
    }


def test_a_node_goes_to_the_highest_grade_whose_minimums_it_meets() -> None:
    """modeling_test.go TestGetIndex: a node with cpu 1m / memory 1024, and one with cpu 20m /
    memory 102400, both count in grade 1."""
    for cpu, memory in (("1m", "1024"), ("20m", "102400")):
        got = allocatable_modelings(_cluster(1), resource_list({"cpu": cpu, "memory": memory}), {})
        assert got == [{"grade": 0, "count": 0}, {"grade": 1, "count": 1}]


def test_used_resources_fill_nodes_in_order() -> None:
    """Four nodes of 2 cpu; 5 cpu in use fill two nodes and half a third: the full ones fall
    to grade 0 (cluster_status_controller.go getAllocatableModelings counts free resources)."""
    got = allocatable_modelings(_cluster(4), {"cpu": 8000, "memory": 8192}, {"cpu": 5000})
    assert got == [{"grade": 0, "count": 2}, {"grade": 1, "count": 2}]


def test_without_a_node_count_nothing_is_reported() -> None:
    """No `sim.tidal.io/nodes`: no modelings, as before upstream's status controller has
    collected them (the estimator then uses the summary)."""
    cluster = {"metadata": {"name": "m"}, "spec": {"resourceModels": MODELS}}
    assert allocatable_modelings(cluster, {"cpu": 8000}, {}) is None
