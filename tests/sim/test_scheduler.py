"""The emulated Karmada scheduler: known answers worked out by hand, modes, and failures."""

from __future__ import annotations

from typing import Any

from tests.sim.karmada_harness import (
    EVEN_UID,
    ODD_UID,
    TWO,
    Harness,
    dynamic_pair,
    dynamic_weights,
    static_weights,
)


def two_clusters(h: Harness) -> None:
    h.cluster("a")
    h.cluster("b")


def split_web(replicas: int, *, latency: float = 0.0, **weights: int) -> Harness:
    """web with `replicas` under policy "split", static `weights` over clusters a and b, settled."""
    h = Harness(scheduler_latency=latency)
    two_clusters(h)
    h.cpp("split", {**TWO, "replicaScheduling": static_weights(**weights)})
    h.deployment("web", replicas)
    h.settle()
    return h


def test_static_one_to_three_over_nine_replicas() -> None:
    """Weights a:1 b:3 over 9 replicas put 2 in a and 7 in b."""
    # a 1 | b 3,1,.6,.43,.33,.27,.23  ->  seats in order: b a b b b a b b b  => a 2, b 7
    h = split_web(9, a=1, b=3)
    assert h.clusters_of("web") == {"a": 2, "b": 7}
    status = h.binding("web")["status"]
    assert h.present_condition(h.binding("web"), "Scheduled")["reason"] == "Success"
    assert status["schedulerObservedGeneration"] == h.binding("web")["metadata"]["generation"]
    assert status["lastScheduledTime"] == h.clock.rfc3339()


def test_static_eighty_twenty_over_nine_replicas() -> None:
    """Weights a:80 b:20 over 9 replicas put 7 in a and 2 in b."""
    # a: 80 26.7 16 11.4 8.9 7.3 6.2 | b: 20 6.7  -> the 9 largest: 7 of a, 2 of b
    h = split_web(9, a=80, b=20)
    assert h.clusters_of("web") == {"a": 7, "b": 2}


def test_equal_weights_over_an_odd_count_follow_the_template_uid_parity() -> None:
    """Equal weights over 3: an even UID hash gives a the extra replica, an odd one gives b."""
    # seat 1 is a tie (names decide), seat 2 goes to the other, seat 3 is a tie again.
    h = Harness()
    two_clusters(h)
    h.cpp("split", {**TWO, "replicaScheduling": static_weights(a=1, b=1)})
    h.deployment("even", 3, uid=EVEN_UID)
    h.deployment("odd", 3, uid=ODD_UID)
    h.settle()
    assert h.clusters_of("even") == {"a": 2, "b": 1}
    assert h.clusters_of("odd") == {"a": 1, "b": 2}


def test_duplicated_gives_every_matching_cluster_all_replicas() -> None:
    """Duplicated with a label selector and an exclusion places the full count in each match."""
    h = Harness()
    h.cluster("a", labels={"tier": "day"})
    h.cluster("b", labels={"tier": "day"})
    h.cluster("c", labels={"tier": "night"})
    affinity = {"labelSelector": {"matchLabels": {"tier": "day"}}, "exclude": ["b"]}
    h.cpp("dup", {"clusterAffinity": affinity})
    h.deployment("web", 4)
    h.settle()
    assert h.clusters_of("web") == {"a": 4}


def dynamic_setup() -> Harness:
    """a has room for 2 one-cpu replicas, b for 4; 6 replicas fill both exactly."""
    # first schedule is a Steady scale-up from 0 over free capacity b:4 a:2:
    # b 4 | a 2 | b 4/3 vs a 2/3 ... seats b a b b a b  => a 2, b 4
    h = dynamic_pair(a_cpu="2", b_cpu="4")
    h.deployment("web", 6, cpu="1")
    h.settle()
    assert h.clusters_of("web") == {"a": 2, "b": 4}
    return h


def test_dynamic_steady_scale_up_keeps_existing_and_places_the_delta() -> None:
    """After a grows to 8 cpus, scaling 6 -> 8 keeps a:2 b:4 and puts both new replicas in a."""
    # free now: a 8-2=6, b 4-4=0; delta 2 by Webster over a:6 (b has 0 votes) -> a +2
    h = dynamic_setup()
    h.set_allocatable("a", cpu="8")
    h.settle()
    h.patch("Deployment", "web", lambda d: d["spec"].update(replicas=8), "team")
    h.settle()
    assert h.clusters_of("web") == {"a": 4, "b": 4}


def test_dynamic_fresh_recomputes_counting_own_replicas_as_available() -> None:
    """After a grows to 8 cpus, a reschedule request (Fresh) spreads 6 as a:4 b:2."""
    # Fresh weights: a 6 free + 2 own = 8, b 0 free + 4 own = 4
    # seats: a(8) b(4) a(2.67) a(1.6) b(1.33 vs a 1.14) a(1.14 vs b .8)  => a 4, b 2
    h = dynamic_setup()
    h.set_allocatable("a", cpu="8")
    h.advance(2.0)
    now = h.clock.rfc3339()
    h.trigger_reschedule("web", now)
    h.settle()
    assert h.clusters_of("web") == {"a": 4, "b": 2}
    assert h.binding("web")["status"]["lastScheduledTime"] == now


def test_reschedule_in_the_same_second_as_the_last_schedule_is_not_later() -> None:
    """A trigger stamped in the same second as lastScheduledTime does not reschedule."""
    h = dynamic_setup()
    h.set_allocatable("a", cpu="8")
    h.settle()
    same_second = h.binding("web")["status"]["lastScheduledTime"]
    h.trigger_reschedule("web", same_second)
    h.settle()
    assert h.clusters_of("web") == {"a": 2, "b": 4}


def test_unschedulable_when_total_capacity_is_short() -> None:
    """6 one-cpu replicas over 2+2 free cpus: Scheduled=False, Unschedulable, nothing placed."""
    h = dynamic_pair(a_cpu="2", b_cpu="2")
    h.deployment("web", 6, cpu="1")
    h.settle()
    binding = h.binding("web")
    cond = h.condition(binding, "Scheduled")
    assert cond is not None and cond["status"] == "False" and cond["reason"] == "Unschedulable"
    assert "Clusters available replicas 4 are not enough to schedule." in cond["message"]
    assert "clusters" not in binding["spec"]
    assert "lastScheduledTime" not in binding["status"]


def test_unschedulable_binding_waits_up_to_five_minutes_after_capacity_grows() -> None:
    """pkg/scheduler/internal/queue/scheduling_queue.go: an Unschedulable binding waits in the
    unschedulable queue (5 minutes, flushed every 30 s); a status-only Cluster change
    (resourceSummary) does not requeue it (event_handler.go updateCluster)."""
    h = dynamic_pair(a_cpu="2", b_cpu="2")
    h.deployment("web", 6, cpu="1")
    h.settle()
    parked = h.clock.now()
    h.set_allocatable("b", cpu="4")
    h.advance(60.0)
    assert h.clusters_of("web") == {}
    h.advance(parked + 330.0 - h.clock.now())
    assert sum(h.clusters_of("web").values()) == 6


def test_unschedulable_binding_is_retried_at_once_on_a_cluster_label_change() -> None:
    """A Cluster label change is a relevant event: waiting bindings are requeued at once."""
    h = dynamic_pair(a_cpu="2", b_cpu="2")
    h.deployment("web", 6, cpu="1")
    h.settle()
    h.set_allocatable("b", cpu="4")
    h.patch("Cluster", "b", lambda c: c["metadata"].setdefault("labels", {}).update(x="y"))
    h.advance(1.0)
    assert sum(h.clusters_of("web").values()) == 6


def test_observed_generation_catches_up_one_pass_after_the_scheduling_patch() -> None:
    """scheduler.go patchBindingStatusCondition writes the generation seen before its own
    spec patch; the patch's event brings the binding back and it catches up then."""
    h = Harness(scheduler_latency=0.5)
    two_clusters(h)
    h.cpp("split", {**TWO, "replicaScheduling": static_weights(a=1, b=1)})
    h.deployment("web", 2)
    h.settle()
    h.advance(0.6)
    binding = h.binding("web")
    assert binding["spec"]["clusters"]
    assert binding["status"]["schedulerObservedGeneration"] == binding["metadata"]["generation"] - 1
    h.advance(0.6)
    binding = h.binding("web")
    assert binding["status"]["schedulerObservedGeneration"] == binding["metadata"]["generation"]


def test_aggregated_uses_as_few_clusters_as_possible() -> None:
    """Aggregated: 5 replicas that fit in b alone all go to b."""
    h = dynamic_pair(a_cpu="3", b_cpu="8", preference="Aggregated")
    h.deployment("web", 5, cpu="1")
    h.settle()
    assert h.clusters_of("web") == {"b": 5}


def test_not_ready_cluster_is_not_a_candidate() -> None:
    """A cluster whose Ready condition is False gets no new replicas."""
    h = Harness()
    h.cluster("a")
    h.cluster("b", ready=False)
    h.cpp("dup", TWO)
    h.deployment("web", 2)
    h.settle()
    assert h.clusters_of("web") == {"a": 2}


def test_no_cluster_fits_reports_no_cluster_fit() -> None:
    """When the affinity matches no cluster, Scheduled=False with reason NoClusterFit."""
    h = Harness()
    h.cluster("a")
    h.cpp("none", {"clusterAffinity": {"clusterNames": ["zz"]}})
    h.deployment("web", 2)
    h.settle()
    cond = h.condition(h.binding("web"), "Scheduled")
    assert cond is not None and cond["reason"] == "NoClusterFit"
    assert cond["message"].startswith("0/1 clusters are available")


def test_scheduler_latency_delays_the_result() -> None:
    """With a scheduler latency, spec.clusters appears only after that much sim time."""
    h = split_web(2, latency=3.0, a=1, b=1)
    assert h.clusters_of("web") == {}
    h.advance(3.0)
    assert h.clusters_of("web") == {"a": 1, "b": 1}


def test_same_placement_after_policy_recreation_does_not_reschedule() -> None:
    """Deleting and recreating a policy with identical placement leaves spec.clusters alone."""
    h = Harness()
    two_clusters(h)
    placement = {**TWO, "replicaScheduling": static_weights(a=1, b=3)}
    h.cpp("split", placement)
    h.deployment("web", 9)
    h.settle()
    before = h.binding("web")
    h.advance(5.0)
    h.store.delete(h.t("ClusterPropagationPolicy"), None, "split")
    h.settle()
    h.cpp("split2", placement)
    h.advance(2.0)
    assert (
        h.binding("web")["metadata"]["annotations"]["clusterpropagationpolicy.karmada.io/name"]
        == "split2"
    )
    after = h.binding("web")
    assert after["spec"]["clusters"] == before["spec"]["clusters"]
    assert after["status"]["lastScheduledTime"] == before["status"]["lastScheduledTime"]


def test_deleted_target_cluster_triggers_a_reschedule() -> None:
    """Removing a cluster that holds replicas reschedules them onto the remaining ones."""
    h = split_web(4, a=1, b=1)
    assert h.clusters_of("web") == {"a": 2, "b": 2}
    h.store.delete(h.t("Cluster"), None, "b")
    h.settle()
    assert h.clusters_of("web") == {"a": 4}


def test_tainted_cluster_needs_a_toleration() -> None:
    """A NoSchedule taint keeps new replicas out unless the placement tolerates it."""
    h = Harness()
    two_clusters(h)

    def taint(obj: dict[str, Any]) -> None:
        obj["spec"]["taints"] = [{"key": "night-only", "value": "true", "effect": "NoSchedule"}]

    h.patch("Cluster", "b", taint)
    h.cpp("dup", TWO)
    h.deployment("web", 1)
    tolerant = {**TWO, "clusterTolerations": [{"key": "night-only", "operator": "Exists"}]}
    h.cpp(
        "tolerant",
        tolerant,
        selectors=[{"apiVersion": "apps/v1", "kind": "Deployment", "name": "batch"}],
    )
    h.deployment("batch", 1)
    h.settle()
    assert h.clusters_of("web") == {"a": 1}
    assert h.clusters_of("batch") == {"a": 1, "b": 1}


def test_cluster_affinities_fall_back_to_the_next_term() -> None:
    """With clusterAffinities, the first term that can schedule wins and is recorded."""
    h = Harness()
    h.cluster("a", cpu="1")
    h.cluster("b")
    terms = [
        {"affinityName": "primary", "clusterNames": ["a"]},
        {"affinityName": "backup", "clusterNames": ["b"]},
    ]
    h.cpp("fo", {"clusterAffinities": terms, "replicaScheduling": dynamic_weights()})
    h.deployment("small", 1, cpu="1")
    h.settle()
    h.deployment("big", 4, cpu="1")
    h.settle()
    assert h.clusters_of("small") == {"a": 1}
    assert h.binding("small")["status"]["schedulerObservedAffinityName"] == "primary"
    assert h.clusters_of("big") == {"b": 4}
    assert h.binding("big")["status"]["schedulerObservedAffinityName"] == "backup"


def test_spread_by_cluster_keeps_at_most_max_groups() -> None:
    """A cluster spread constraint with maxGroups 1 keeps a workload in one cluster."""
    h = Harness()
    h.cluster("a", cpu="4")
    h.cluster("b", cpu="8")
    spread = [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}]
    h.cpp("one", {**TWO, "spreadConstraints": spread, "replicaScheduling": dynamic_weights()})
    h.deployment("web", 6, cpu="1")
    h.settle()
    # candidates ordered by available replicas: b (8) before a (4); b alone fits 6
    assert h.clusters_of("web") == {"b": 6}


def test_spread_min_groups_above_the_feasible_clusters_fails() -> None:
    """minGroups larger than the feasible clusters: Scheduled=False, reason SchedulerError."""
    h = Harness()
    two_clusters(h)
    spread = [{"spreadByField": "cluster", "minGroups": 3, "maxGroups": 3}]
    h.cpp("three", {**TWO, "spreadConstraints": spread, "replicaScheduling": dynamic_weights()})
    h.deployment("web", 2)
    h.settle()
    cond = h.condition(h.binding("web"), "Scheduled")
    assert cond is not None and cond["reason"] == "SchedulerError"
