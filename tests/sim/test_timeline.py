"""The timeline of assigned and ready replicas: Karmada moves replicas without surge."""

from __future__ import annotations

from tests.sim.karmada_harness import Harness

ONLY_A = {"clusterAffinity": {"clusterNames": ["a"]}}
ONLY_B = {"clusterAffinity": {"clusterNames": ["b"]}}


def test_a_move_drops_the_old_cluster_at_once_and_fills_the_new_after_start_up() -> None:
    """Moving 3 replicas A->B with a 2 s start-up: A goes to 0 at once, B is 3 ready 2 s later."""
    h = Harness()
    h.cluster("a", annotations={"sim.tidal.io/pod-startup-seconds": "2"})
    h.cluster("b", annotations={"sim.tidal.io/pod-startup-seconds": "2"})
    h.cpp("p", ONLY_A)
    h.deployment("web", 3)
    h.settle()
    h.advance(10.0)
    moved_at = h.clock.now()
    h.patch("ClusterPropagationPolicy", "p", lambda p: p["spec"].update(placement=ONLY_B))
    h.settle()
    h.advance(5.0)
    after = [s for s in h.mgr.timeline.samples() if s["t"] >= moved_at]
    assert {
        "t": moved_at,
        "workload": "team/Deployment/web",
        "cluster": "a",
        "assigned": 0,
        "ready": 0,
    } in after
    b = [(s["t"] - moved_at, s["assigned"], s["ready"]) for s in after if s["cluster"] == "b"]
    assert b == [(0.0, 3, 0), (2.0, 3, 3)]
    total_ready = 0  # nothing ready anywhere in between: no surge
    for s in after:
        if 0 < s["t"] - moved_at < 2.0:
            total_ready += s["ready"]
    assert total_ready == 0


def test_samples_are_recorded_only_on_change() -> None:
    """Each sample differs from the previous one of its workload and cluster."""
    h = Harness()
    h.cluster("a")
    h.cpp("p", ONLY_A)
    h.deployment("web", 2)
    h.settle()
    h.advance(5.0)
    h.advance(5.0)
    samples = h.mgr.timeline.samples()
    assert [(s["assigned"], s["ready"]) for s in samples] == [(2, 0), (2, 2)]
    assert isinstance(samples[0]["t"], float)
