"""Karmada's latencies, in simulated seconds: status reflection, summary refresh, overcommit."""

from __future__ import annotations

from tests.sim.karmada_harness import TWO, Harness, dynamic_weights, static_weights
from tidal_sim.topology import load_topology
from tidal_sim.version import LATEST_RELEASE, KarmadaVersion


def _static(h: Harness, replicas: int = 2) -> None:
    h.cluster("a", annotations={"sim.tidal.io/pod-startup-seconds": "1"})
    h.cluster("b", annotations={"sim.tidal.io/pod-startup-seconds": "1"})
    h.cpp("split", {**TWO, "replicaScheduling": static_weights(a=1, b=1)})
    h.deployment("web", replicas)
    h.settle()


def _binding_ready(h: Harness, cluster: str) -> int:
    for item in (h.binding("web").get("status") or {}).get("aggregatedStatus") or []:
        if item.get("clusterName") == cluster:
            return int((item.get("status") or {}).get("readyReplicas") or 0)
    return 0


def test_member_status_reaches_the_binding_after_the_status_delay() -> None:
    """Member informer -> Work status -> binding aggregatedStatus takes seconds (FACTS: binding
    status follows member state, not instantly): ready pods show up status_delay later."""
    h = Harness(status_delay=2.0)
    _static(h)
    h.advance(1.5)  # pods ready in the members at 1 s
    assert h.ready_in("web", "a") == 1 and _binding_ready(h, "a") == 0
    h.advance(2.0)
    assert _binding_ready(h, "a") == 1


def test_cluster_summary_is_refreshed_on_its_interval() -> None:
    """--cluster-status-update-frequency (10 s): allocated in resourceSummary moves only at
    the next refresh tick, so the scheduler estimates from stale usage in between."""
    h = Harness(cluster_status_interval=10.0)
    _static(h, replicas=4)
    h.advance(2.0)
    summary = h.get("Cluster", "a")["status"]["resourceSummary"]
    assert "allocated" not in summary
    h.advance(10.0)
    assert h.get("Cluster", "a")["status"]["resourceSummary"]["allocated"]["pods"] == "2"


def _overcommit(gates: frozenset[str], version: KarmadaVersion = LATEST_RELEASE) -> int:
    """Dynamic workloads of 4 and 3 one-cpu replicas, scheduled back to back between summary
    refreshes, against a and b with 3 cpu each: replicas placed in total."""
    h = Harness(feature_gates=gates, cluster_status_interval=10.0, karmada_version=version)
    h.cluster("a", cpu="3")
    h.cluster("b", cpu="3")
    h.cpp("dyn", {**TWO, "replicaScheduling": dynamic_weights()})
    h.deployment("one", 4, cpu="1")
    h.settle()
    h.deployment("two", 3, cpu="1")
    h.settle()
    return sum(h.clusters_of(n).get("a", 0) + h.clusters_of(n).get("b", 0) for n in ("one", "two"))


def test_in_flight_placements_are_deducted_only_with_overcommit_protection() -> None:
    """pkg/estimator/client/general.go: without SchedulingOvercommitProtection (alpha, off)
    the second workload sees the stale summary and over-commits the 6 cpus (7 placed); with
    it, the scheduler's own in-flight replicas are deducted and the second is Unschedulable."""
    assert _overcommit(frozenset()) == 7
    gate = frozenset({"SchedulingOvercommitProtection"})
    assert _overcommit(gate, KarmadaVersion.V1_18) == 4
    assert _overcommit(gate, KarmadaVersion.V1_19) == 4
    assert _overcommit(gate, KarmadaVersion.V1_17) == 7  # v1.17 has no such gate


def test_topology_timing_defaults_and_settings() -> None:
    """EmulatorSettings defaults: 1 s status delay, 10 s summary refresh, no policy-change
    lag; all settable."""
    default = load_topology([]).settings
    assert (default.status_delay, default.cluster_status_interval, default.policy_change_lag) == (
        1.0,
        10.0,
        0.0,
    )
    doc = {
        "apiVersion": "sim.tidal.io/v1alpha1",
        "kind": "EmulatorSettings",
        "spec": {
            "statusDelaySeconds": 0.2,
            "clusterStatusUpdateSeconds": 3,
            "policyChangeLagSeconds": 2,
        },
    }
    settings = load_topology([doc]).settings
    assert (
        settings.status_delay,
        settings.cluster_status_interval,
        settings.policy_change_lag,
    ) == (0.2, 3.0, 2.0)
