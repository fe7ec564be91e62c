"""Member clusters: start-up delay, capacity and pending pods, faults, status reflection."""

from __future__ import annotations

import time
from typing import Any

from tests.sim.karmada_harness import TWO, Harness, static_weights
from tidal_sim.clock import ScaledClock

ONLY_A = {"clusterAffinity": {"clusterNames": ["a"]}}


def web_in_a(replicas: int, annotations: dict[str, str]) -> Harness:
    """A settled harness: `replicas` of web placed in the one cluster a, which has `annotations`."""
    h = Harness()
    h.cluster("a", annotations=annotations)
    h.cpp("p", ONLY_A)
    h.deployment("web", replicas)
    h.settle()
    return h


def test_replicas_become_ready_after_the_cluster_start_up_delay() -> None:
    """With pod-startup-seconds 5, nothing is ready at 4.9 s and everything is at 5 s."""
    h = web_in_a(3, {"sim.tidal.io/pod-startup-seconds": "5"})
    h.advance(4.9)
    assert h.ready_in("web", "a") == 0
    h.advance(0.1)
    assert h.ready_in("web", "a") == 3


def test_replicas_above_capacity_stay_pending_until_room_frees() -> None:
    """Static weights ignore capacity: 4 replicas in a 3-pod cluster leave one pending."""
    h = Harness()
    h.cluster("a", pods="3")
    h.cpp("p", {**ONLY_A, "replicaScheduling": static_weights(a=1)})
    h.deployment("web", 4)
    h.settle()
    h.advance(2.0)
    assert h.clusters_of("web") == {"a": 4}
    assert h.ready_in("web", "a") == 3
    summary = h.get("Cluster", "a")["status"]["resourceSummary"]
    assert summary["allocated"]["pods"] == "3" and summary["allocating"]["pods"] == "1"
    status = h.get("Deployment", "web", "team")["status"]
    assert status["readyReplicas"] == 3 and status["unavailableReplicas"] == 1
    item = h.binding("web")["status"]["aggregatedStatus"][0]
    assert item["health"] == "Unhealthy"
    h.set_allocatable("a", pods="10")
    h.settle()
    h.advance(2.0)
    assert h.ready_in("web", "a") == 4
    assert h.binding("web")["status"]["aggregatedStatus"][0]["health"] == "Healthy"


def test_pods_fail_annotation_keeps_replicas_unready() -> None:
    """In a cluster marked pods-fail, replicas are placed but never become ready."""
    h = web_in_a(2, {"sim.tidal.io/pods-fail": "true"})
    h.advance(30.0)
    assert h.ready_in("web", "a") == 0
    item = h.binding("web")["status"]["aggregatedStatus"][0]
    assert item["health"] == "Unhealthy" and "readyReplicas" not in item["status"]

    def heal(obj: dict[str, Any]) -> None:
        obj["metadata"]["annotations"].pop("sim.tidal.io/pods-fail")

    h.patch("Cluster", "a", heal)
    h.settle()
    h.advance(2.0)
    assert h.ready_in("web", "a") == 2


def test_termination_delay_holds_capacity_before_replacements_start() -> None:
    """Removed replicas keep their room for termination-seconds; the new ones wait for it."""
    h = Harness()
    h.cluster("a", pods="4", annotations={"sim.tidal.io/termination-seconds": "10"})
    h.cpp("p", {**ONLY_A, "replicaScheduling": static_weights(a=1)})
    h.deployment("old", 4)
    h.settle()
    h.advance(2.0)
    h.patch("Deployment", "old", lambda d: d["spec"].update(replicas=0), "team")
    h.deployment("new", 4)
    h.settle()
    h.advance(5.0)
    assert h.ready_in("old", "a") == 0 and h.ready_in("new", "a") == 0
    h.advance(5.0)  # termination over at 10 s; start-up takes 2 s more
    h.advance(2.0)
    assert h.ready_in("new", "a") == 4


def test_deployment_status_fields_and_template_aggregate() -> None:
    """aggregatedStatus carries the Deployment counters per cluster; the template sums them."""
    h = Harness()
    h.cluster("a")
    h.cluster("b")
    h.cpp("p", {**TWO, "replicaScheduling": static_weights(a=1, b=2)})
    h.deployment("web", 3)
    h.settle()
    h.advance(2.0)
    items = h.binding("web")["status"]["aggregatedStatus"]
    assert [i["clusterName"] for i in items] == ["a", "b"]
    assert items[1]["applied"] is True and items[1]["health"] == "Healthy"
    assert set(items[1]["status"]) == {
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
        "observedGeneration",
        "generation",
        "resourceTemplateGeneration",
    }  # unavailableReplicas is 0 and omitted, as Go's omitempty does
    template = h.get("Deployment", "web", "team")
    assert template["status"]["readyReplicas"] == 3
    assert template["status"]["observedGeneration"] == template["metadata"]["generation"]
    assert h.present_condition(h.binding("web"), "FullyApplied")["status"] == "True"


def test_configmap_templates_report_health_only() -> None:
    """A ConfigMap binding goes to every cluster and reports applied+Healthy, no counters."""
    h = Harness()
    h.cluster("a")
    h.cluster("b")
    h.cpp("cm", TWO, selectors=[{"apiVersion": "v1", "kind": "ConfigMap"}])
    h.store.create(
        h.t("ConfigMap"), {"metadata": {"name": "conf", "namespace": "team"}, "data": {"k": "v"}}
    )
    h.settle()
    binding = h.get("ResourceBinding", "conf-configmap", "team")
    assert [c["name"] for c in binding["spec"]["clusters"]] == ["a", "b"]
    assert "replicas" not in binding["spec"]["clusters"][0]
    assert binding["status"]["aggregatedStatus"] == [
        {"clusterName": "a", "applied": True, "health": "Healthy"},
        {"clusterName": "b", "applied": True, "health": "Healthy"},
    ]


def test_cluster_reports_a_ready_condition() -> None:
    """A registered cluster without conditions gets Ready=True; a NotReady one keeps its own."""
    h = Harness()
    h.cluster("a")
    h.cluster("b", ready=False)
    h.settle()
    assert h.present_condition(h.get("Cluster", "a"), "Ready")["status"] == "True"
    assert h.present_condition(h.get("Cluster", "b"), "Ready")["status"] == "False"


def test_started_manager_reacts_on_its_own_thread() -> None:
    """After start(), with a fast ScaledClock, replicas become ready without manual stepping."""
    clock = ScaledClock(speed=50.0)  # the 2 s start-up takes 40 ms of real time
    h = Harness(clock=clock)
    h.cluster("a")
    h.mgr.start()
    try:
        h.cpp("p", ONLY_A)
        h.deployment("web", 2)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and h.ready_in("web", "a") < 2:
            time.sleep(0.02)
        assert h.ready_in("web", "a") == 2
        h.settle()
        assert h.get("Deployment", "web", "team")["status"]["readyReplicas"] == 2
    finally:
        h.mgr.stop()
        clock.stop()
