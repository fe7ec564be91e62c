"""The emulated WorkloadRebalancer controller: upstream's status semantics and Fresh reschedule."""

from __future__ import annotations

from typing import Any

from tests.sim.karmada_harness import Harness, dynamic_pair


def rebalancer(h: Harness, name: str, workloads: list[str], **spec: Any) -> dict[str, Any]:
    body = {
        "metadata": {"name": name},
        "spec": {
            "workloads": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "team", "name": n}
                for n in workloads
            ],
            **spec,
        },
    }
    return h.store.create(h.t("WorkloadRebalancer"), body)


def grown_cluster_setup() -> Harness:
    """Two 6-replica workloads placed a:2 b:4 each, then cluster a grows."""
    h = dynamic_pair(a_cpu="4", b_cpu="8")
    h.deployment("w1", 6, cpu="1")
    h.settle()
    h.deployment("w2", 6, cpu="1")
    h.settle()
    return h


def test_rebalancer_over_three_workloads_one_without_binding() -> None:
    """Two Successful, one Failed/ReferencedBindingNotFound, finishTime set, Fresh reschedules."""
    # w1 first: free b 8, a 4 -> Webster 6 over 8:4 -> b 4, a 2.
    # w2 next:  free b 4, a 2 -> Webster 6 over 4:2 -> b 4, a 2 (cluster full).
    # a grows to 16 cpus: free a 12, b 0.
    # Fresh for w1: a 12 free + 2 own = 14, b 0 + 4 own = 4; Webster 6 over 14:4:
    #   a(14) a(4.67 vs 4) b(4 vs 2.8) a(2.8 vs 1.33) a(2) a(1.56 vs 1.33)  => a 5, b 1
    # (w2 is rescheduled after w1's move changed the free capacity; only "more in a" is asserted)
    h = grown_cluster_setup()
    assert h.clusters_of("w1") == {"a": 2, "b": 4}
    assert h.clusters_of("w2") == {"a": 2, "b": 4}
    h.set_allocatable("a", cpu="16")
    h.advance(3.0)
    created = rebalancer(h, "night", ["w1", "w2", "ghost"])
    h.settle()
    obj = h.get("WorkloadRebalancer", "night")
    results = {
        w["workload"]["name"]: (w.get("result"), w.get("reason"))
        for w in obj["status"]["observedWorkloads"]
    }
    assert results == {
        "w1": ("Successful", None),
        "w2": ("Successful", None),
        "ghost": ("Failed", "ReferencedBindingNotFound"),
    }
    assert [w["workload"]["name"] for w in obj["status"]["observedWorkloads"]] == [
        "ghost",
        "w1",
        "w2",
    ]
    assert obj["status"]["finishTime"] == h.clock.rfc3339()
    assert obj["status"]["observedGeneration"] == 1
    stamp = created["metadata"]["creationTimestamp"]
    for name in ("w1", "w2"):
        binding = h.binding(name)
        assert binding["spec"]["rescheduleTriggeredAt"] == stamp
        assert binding["status"]["lastScheduledTime"] == h.clock.rfc3339()
    assert h.clusters_of("w1") == {"a": 5, "b": 1}
    assert h.clusters_of("w2")["a"] > 2


def test_trigger_is_not_moved_back_by_an_older_rebalancer() -> None:
    """rescheduleTriggeredAt is only written when unset or older than the creationTimestamp."""
    h = grown_cluster_setup()
    h.advance(10.0)
    later = h.clock.rfc3339()
    h.trigger_reschedule("w1", "2030-01-01T00:00:00Z")
    h.settle()
    rebalancer(h, "r", ["w1"])
    h.settle()
    assert h.binding("w1")["spec"]["rescheduleTriggeredAt"] == "2030-01-01T00:00:00Z"
    status = h.get("WorkloadRebalancer", "r")["status"]
    assert status["observedWorkloads"][0]["result"] == "Successful"
    assert later  # the rebalancer itself was created at `later`


def test_ttl_deletes_the_rebalancer_after_finish() -> None:
    """With ttlSecondsAfterFinished the object is deleted that long after finishTime."""
    h = grown_cluster_setup()
    rebalancer(h, "short", ["w1"], ttlSecondsAfterFinished=5)
    h.settle()
    h.advance(4.0)
    assert h.store.list(h.t("WorkloadRebalancer"))[0]
    h.advance(1.0)
    assert h.store.list(h.t("WorkloadRebalancer"))[0] == []


def test_editing_workloads_keeps_successful_entries() -> None:
    """Removing a Successful workload from spec keeps it in status; a new one is triggered."""
    h = grown_cluster_setup()
    rebalancer(h, "r", ["w1"])
    h.settle()

    def change(obj: dict[str, Any]) -> None:
        obj["spec"]["workloads"] = [
            {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "team", "name": "w2"}
        ]

    h.patch("WorkloadRebalancer", "r", change)
    h.settle()
    status = h.get("WorkloadRebalancer", "r")["status"]
    assert [(w["workload"]["name"], w["result"]) for w in status["observedWorkloads"]] == [
        ("w1", "Successful"),
        ("w2", "Successful"),
    ]
    assert status["observedGeneration"] == 2
