"""The soak's promise 9 is not vacuous: an override outliving its run past the sweep interval,
and one capping a workload below its spec past the grace, are reported; a prompt release and
a surge above the assignment are not."""

from __future__ import annotations

from typing import Any

from benchmarks.soak.leftovers import LeftoverWatch


def _override(
    name: str, run: str, replicas: dict[str, int], workload: str = "web-0"
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ai-app",
            "labels": {"app.kubernetes.io/managed-by": "tidal", "tidal.io/run": run},
        },
        "spec": {
            "resourceSelectors": [{"kind": "Deployment", "name": workload}],
            "overrideRules": [
                {
                    "targetCluster": {"clusterNames": [c]},
                    "overriders": {
                        "plaintext": [{"path": "/spec/replicas", "operator": "replace", "value": n}]
                    },
                }
                for c, n in replicas.items()
            ],
        },
    }


def _binding(replicas: int, assigned: dict[str, int]) -> dict[str, Any]:
    return {
        "spec": {
            "replicas": replicas,
            "clusters": [{"name": c, "replicas": n} for c, n in assigned.items()],
        }
    }


def _watch() -> tuple[LeftoverWatch, list[str]]:
    found: list[str] = []
    return LeftoverWatch(30.0, 15.0, found.append), found


def test_an_override_deleted_within_the_sweep_interval_is_fine_and_a_late_one_is_not() -> None:
    """Deleted 10 s after its run ended: fine; another still there 60 s after: reported."""
    watch, found = _watch()
    watch.on_override("ADDED", _override("a", "r1", {"cluster-b": 5}), 0.0)
    watch.on_override("ADDED", _override("b", "r2", {"cluster-b": 5}, "web-1"), 0.0)
    watch.on_run_state({"runId": "r1", "phase": "done"}, 100.0)
    watch.on_run_state({"runId": "r2", "phase": "done"}, 100.0)
    watch.on_override("DELETED", _override("a", "r1", {"cluster-b": 5}), 110.0)
    assert found == []
    watch.finish(160.0)
    assert found == [
        "override ai-app/b of run r2 still there 60s after its run ended (sweep interval 30s)"
    ]


def test_a_cap_below_the_spec_is_reported_after_the_grace_and_a_surge_is_not() -> None:
    """spec 10, assigned 8:2, override b=5: 13 >= 10, a surge; then the user's scale to 20
    (assigned 16:4, b still 5: 21 >= 20) is fine; assigned 0:20 with b=5 caps at 5 < 20,
    reported once it lasts past 15 s."""
    watch, found = _watch()
    watch.on_override("ADDED", _override("a", "r1", {"cluster-b": 5}), 0.0)
    watch.on_binding("web-0", _binding(10, {"cluster-a": 8, "cluster-b": 2}), 1.0)
    watch.on_binding("web-0", _binding(20, {"cluster-a": 16, "cluster-b": 4}), 2.0)
    watch.on_binding("web-0", _binding(20, {"cluster-b": 20}), 3.0)
    watch.on_binding("web-0", _binding(20, {"cluster-b": 20}), 10.0)
    assert found == []
    watch.on_binding("web-0", _binding(20, {"cluster-b": 20}), 20.0)
    assert found == ["override ai-app/a caps web-0 below its spec for 17s"]
