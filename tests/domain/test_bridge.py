"""Bridge planning (pure): which workloads need one, the placement it writes, the room it
takes, and that the plan counts it like a surge and finds a 100% floor held."""

from __future__ import annotations

from tidal.domain.bridge import bridge_growth, bridge_placement, needs_bridge
from tidal.domain.floors import FloorRule
from tidal.domain.plan import PlannedWorkload
from tidal.domain.surge import Room, SurgeSpec, make_surge_plan
from tidal.domain.waves import WorkloadKey

GPU = "nvidia.com/gpu"
FULL = [FloorRule(min_available_percent=100)]


def _w(name: str, before: dict[str, int], after: dict[str, int], replicas: int) -> PlannedWorkload:
    return PlannedWorkload(
        WorkloadKey("ns", name, "Deployment"), replicas, before, after, request={GPU: 1.0}
    )


def _rooms(b_gpu: float) -> dict[str, Room]:
    return {"a": Room({GPU: 100.0, "pods": 100.0}), "b": Room({GPU: b_gpu, "pods": 100.0})}


def test_only_a_destination_without_a_member_needs_a_bridge() -> None:
    """a -> b with nothing in b needs one; a cluster listed with 0 (empty workload
    propagation) or holding replicas already does not."""
    assert needs_bridge({"a": 1}, {"b": 1})
    assert not needs_bridge({"a": 1, "b": 0}, {"b": 1})
    assert not needs_bridge({"a": 4, "b": 1}, {"b": 5})


def test_the_bridge_placement_is_duplicated_over_its_clusters_keeping_tolerations() -> None:
    """Cluster choice and division are replaced; tolerations stay; spread constraints go."""
    placement = {
        "clusterAffinity": {"labelSelector": {"matchLabels": {"gpu": "yes"}}},
        "clusterTolerations": [{"key": "k", "operator": "Exists"}],
        "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1}],
        "replicaScheduling": {"replicaSchedulingType": "Divided"},
    }
    assert bridge_placement(placement, ["b", "a"]) == {
        "clusterAffinity": {"clusterNames": ["a", "b"]},
        "clusterTolerations": [{"key": "k", "operator": "Exists"}],
        "replicaScheduling": {"replicaSchedulingType": "Duplicated"},
    }


def test_the_room_is_the_full_count_beyond_what_each_cluster_has() -> None:
    """2 replicas from a to b: b needs room for 2, a has them already."""
    assert bridge_growth(2, {"a": 2}, ["a", "b"]) == {"b": 2}


def test_with_a_lazy_policy_small_workloads_are_bridged_and_the_floor_holds() -> None:
    """1-2 replica workloads a -> b under 100% available: bridged, their room counted in the
    wave's surge and extra, the plan safe; a 5-replica workload keeping b is surged."""
    ws = [
        _w("one", {"a": 1}, {"b": 1}, 1),
        _w("two", {"a": 2}, {"b": 2}, 2),
        _w("five", {"a": 4, "b": 1}, {"b": 5}, 5),
    ]
    plan = make_surge_plan(
        ws, wave_size=3, floors=FULL, order="name", rooms=_rooms(50.0), spec=SurgeSpec(bridge=True)
    )
    by_name = {w.key.name: w for w in plan.workloads}
    assert by_name["one"].bridged and by_name["two"].bridged and by_name["five"].surged
    assert by_name["two"].bridge_shares() == {"a": 2, "b": 2}
    assert plan.safe, plan.violations
    assert plan.rooms[0].surge["b"][GPU] == 1 + 2 + 4
    assert any("ns/Deployment/one: bridged" in c for c in plan.capacity)


def test_without_a_lazy_policy_small_workloads_move_directly_and_the_plan_says_why() -> None:
    """A rebalance: no bridge; the 100% floor breaks, and the note names trigger touch."""
    plan = make_surge_plan(
        [_w("one", {"a": 1}, {"b": 1}, 1)],
        wave_size=1,
        floors=FULL,
        order="name",
        rooms=_rooms(50.0),
        spec=SurgeSpec(bridge=False),
    )
    assert not plan.workloads[0].bridged and not plan.safe
    assert any("a bridge needs trigger touch" in c for c in plan.capacity)


def test_a_bridge_without_room_follows_when_no_room() -> None:
    """b has 1 GPU free: the 2-replica bridge never fits; refused with whenNoRoom refuse."""
    ws = [_w("two", {"a": 2}, {"b": 2}, 2)]
    refuse = make_surge_plan(
        ws,
        wave_size=1,
        floors=[],
        order="name",
        rooms=_rooms(1.0),
        spec=SurgeSpec(headroom_percent=0, when_no_room="refuse", bridge=True),
    )
    assert not refuse.workloads[0].bridged and "ns/Deployment/two" in refuse.no_room
    assert any("whenNoRoom is refuse" in p for p in refuse.problems)
