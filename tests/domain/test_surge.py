"""Surge planning (pure): what a surge holds, waves sized to fit it with headroom, workloads
without room, and floors that hold because nothing leaves before its replacement is ready."""

from __future__ import annotations

from dataclasses import replace

from tidal.domain.floors import FloorRule
from tidal.domain.plan import PlannedWorkload, make_plan
from tidal.domain.prediction import ModelNodes
from tidal.domain.surge import (
    Room,
    SurgeSpec,
    growth,
    make_surge_plan,
    raise_ahead,
    size_waves,
    surge_need,
)
from tidal.domain.waves import WorkloadKey

GPU = "nvidia.com/gpu"


def _w(
    name: str,
    before: dict[str, int],
    after: dict[str, int],
    replicas: int = 5,
    *,
    gpu: float = 1.0,
    kind: str = "Deployment",
) -> PlannedWorkload:
    return PlannedWorkload(
        WorkloadKey("ns", name, kind), replicas, before, after, request={GPU: gpu, "cpu": 0.5}
    )


def _rooms(b_gpu: float, a_gpu: float = 100.0) -> dict[str, Room]:
    return {
        "a": Room({GPU: a_gpu, "cpu": 100.0, "pods": 100.0}),
        "b": Room({GPU: b_gpu, "cpu": 100.0, "pods": 100.0}),
    }


NIGHT = ({"a": 4, "b": 1}, {"b": 5})  # 80/20 -> 0/100 of 5 replicas


def test_a_surge_holds_the_growth_of_each_destination() -> None:
    """80/20 -> 0/100 of 5: b grows by 4 replicas, so the surge holds 4 GPUs and 4 pods there."""
    w = _w("d", *NIGHT)
    assert growth(w) == {"b": 4}
    assert surge_need(w) == {"b": {GPU: 4.0, "cpu": 2.0, "pods": 4.0}}


def test_kinds_without_spec_replicas_are_not_surged() -> None:
    """A kind an override cannot raise at /spec/replicas has no surge (it moves directly)."""
    assert growth(_w("j", *NIGHT, kind="Job")) == {}


def test_waves_close_early_when_the_next_surge_does_not_fit() -> None:
    """b has 20 GPUs free and 50% headroom: 10 usable, two 4-GPU surges in wave 1; each move
    then keeps its 4 GPUs in b, so later waves fit fewer."""
    ws = [_w(f"d{i}", *NIGHT) for i in range(4)]
    layout = size_waves(ws, max_size=4, rooms=_rooms(20.0), spec=SurgeSpec(headroom_percent=50))
    assert [[w.key.name for w in wave] for wave in layout.waves] == [["d0", "d1"], ["d2"], ["d3"]]
    assert layout.surge[0] == {"b": {GPU: 8.0, "cpu": 4.0, "pods": 8.0}}
    assert [f["b"][GPU] for f in layout.free_before] == [20.0, 12.0, 8.0]
    assert [f["b"][GPU] for f in layout.free_after] == [12.0, 8.0, 4.0]
    assert layout.free_after[0]["a"][GPU] == 108.0  # the sources' replicas are gone
    assert all(w.surged for wave in layout.waves for w in wave) and not layout.no_room


def test_a_surge_that_never_fits_is_reported_with_what_it_lacks() -> None:
    """With 3 GPUs free in b (no headroom), a 4-GPU surge has no room: its shortfall is named."""
    layout = size_waves(
        [_w("big", *NIGHT)], max_size=1, rooms=_rooms(3.0), spec=SurgeSpec(headroom_percent=0)
    )
    assert layout.no_room == {"ns/Deployment/big": {"b": {GPU: 1.0}}}
    assert not layout.waves[0][0].surged


def test_headroom_is_left_unused() -> None:
    """4 GPUs free fit a 4-GPU surge without headroom, not with 10% of it kept."""
    w = [_w("d", *NIGHT)]
    assert not size_waves(
        w, max_size=1, rooms=_rooms(4.0), spec=SurgeSpec(headroom_percent=0)
    ).no_room
    assert size_waves(w, max_size=1, rooms=_rooms(4.0), spec=SurgeSpec(headroom_percent=10)).no_room


def test_resource_models_bound_a_surge_replica_by_replica() -> None:
    """b's summary has GPUs to spare but its model nodes hold 1 GPU each, 2 nodes: 2 fit."""
    rooms = _rooms(100.0)
    rooms["b"] = Room(
        {GPU: 100.0, "cpu": 100.0, "pods": 100.0},
        (ModelNodes(2, {GPU: 1.0, "cpu": 8.0, "memory": 2.0**34}),),
    )
    layout = size_waves(
        [_w("d", *NIGHT)], max_size=1, rooms=rooms, spec=SurgeSpec(headroom_percent=0)
    )
    assert layout.no_room == {"ns/Deployment/d": {"b": {"pods": 2.0}}}


def test_a_resource_the_models_do_not_grade_is_bounded_by_the_summary() -> None:
    """Karmada's default models grade only cpu and memory: a GPU surge is placed by the member's
    scheduler, so b's free GPUs in the summary bound it, not the estimator's 0 for GPUs."""
    rooms = _rooms(100.0)
    rooms["b"] = Room(
        {GPU: 4.0, "cpu": 100.0, "memory": 2.0**40, "pods": 100.0},
        (ModelNodes(4, {"cpu": 8.0, "memory": 2.0**34}),),
    )
    spec = SurgeSpec(headroom_percent=0)
    assert not size_waves([_w("d", *NIGHT)], max_size=1, rooms=rooms, spec=spec).no_room
    rooms["b"] = Room(
        {GPU: 3.0, "cpu": 100.0, "memory": 2.0**40, "pods": 100.0}, rooms["b"].model_nodes
    )
    assert size_waves([_w("d", *NIGHT)], max_size=1, rooms=rooms, spec=spec).no_room == {
        "ns/Deployment/d": {"b": {GPU: 1.0}}
    }


def test_full_availability_holds_with_surge_and_breaks_without() -> None:
    """minAvailablePercent 100: the surge plan is safe at every step, the direct one is not."""
    ws = [_w(f"d{i}", *NIGHT) for i in range(4)]
    floors = [FloorRule(min_available_percent=100)]
    surged = make_surge_plan(
        ws, wave_size=2, floors=floors, order="name", rooms=_rooms(50.0), spec=SurgeSpec()
    )
    assert surged.safe and surged.strategy == "surge"
    assert not make_plan(ws, wave_size=2, floors=floors).safe


def test_three_replica_workloads_keep_full_availability() -> None:
    """3 replicas (a:2 b:1 by day, b:3 by night) under 100% available: refused direct, safe
    surged (b is raised to 3 before a's 2 go)."""
    ws = [_w(f"s{i}", {"a": 2, "b": 1}, {"b": 3}, replicas=3) for i in range(3)]
    floors = [FloorRule(min_available_percent=100)]
    assert not make_plan(ws, wave_size=3, floors=floors).safe
    plan = make_surge_plan(
        ws, wave_size=3, floors=floors, order="name", rooms=_rooms(50.0), spec=SurgeSpec()
    )
    assert plan.safe, plan.violations


def test_the_day_switch_holds_the_shrinking_cluster_until_the_move_is_ready() -> None:
    """0/100 -> 80/20 of 5: cluster-a has no member to raise, so b is held at 5 through the
    move (extra 4 held there, no free room taken) and 100% availability holds."""
    w = _w("d", {"b": 5}, {"a": 4, "b": 1})
    plan = make_surge_plan(
        [w],
        wave_size=1,
        floors=[FloorRule(min_available_percent=100)],
        order="name",
        rooms=_rooms(0.0, a_gpu=50.0),
        spec=SurgeSpec(),
    )
    assert plan.safe, plan.violations
    assert plan.waves[0][0].surge() == {"b": 5}
    assert plan.rooms[0].surge == {} and plan.rooms[0].extra["b"][GPU] == 4.0


def test_a_workload_with_no_cluster_kept_cannot_be_surged() -> None:
    """1 replica moving from a to b: Karmada builds no member in b before the move, so there
    is nothing to raise; the plan says so and checks it as a direct move (refused here)."""
    ws = [_w("s", {"a": 1}, {"b": 1}, replicas=1)]
    plan = make_surge_plan(
        ws,
        wave_size=1,
        floors=[FloorRule(min_available_percent=50)],
        order="name",
        rooms=_rooms(50.0),
        spec=SurgeSpec(),
    )
    assert not plan.waves[0][0].surged and not plan.safe
    assert any("no cluster holds it both before and after" in c for c in plan.capacity)


def test_steps_show_ready_replicas_and_the_surge_peak() -> None:
    """Each wave step reports ready per cluster after it and at the surge's peak."""
    ws = [_w(f"d{i}", *NIGHT) for i in range(2)]
    plan = make_surge_plan(
        ws, wave_size=1, floors=[], order="name", rooms=_rooms(50.0), spec=SurgeSpec()
    )
    assert [s.label for s in plan.steps] == ["before", "wave 1", "wave 2", "end"]
    assert plan.steps[1].surged == {"a": 8, "b": 6}  # d0 at a:4 + b:5, d1 untouched
    assert plan.steps[1].ready == {"a": 4, "b": 6}
    data = plan.to_dict()
    assert [w["index"] for w in data["waves"]] == [1, 2]
    assert data["waves"][0]["surge"] == {"b": {GPU: 4.0, "cpu": 2.0, "pods": 4.0}}
    assert data["waves"][0]["workloads"][0]["surge"] == {"b": 5}


def test_refuse_when_no_room_refuses_the_plan() -> None:
    """whenNoRoom: refuse turns a surge that never fits into a plan problem; direct warns."""
    ws = [_w("big", *NIGHT)]
    refuse = make_surge_plan(
        ws,
        wave_size=1,
        floors=[],
        order="name",
        rooms=_rooms(1.0),
        spec=SurgeSpec(when_no_room="refuse"),
    )
    assert not refuse.safe and "its surge never fits" in refuse.problems[0]
    direct = make_surge_plan(
        ws,
        wave_size=1,
        floors=[],
        order="name",
        rooms=_rooms(1.0),
        spec=SurgeSpec(when_no_room="direct"),
    )
    assert direct.safe and "moves without surge" in direct.capacity[0]


def test_direct_fallback_is_refused_when_it_breaks_a_floor() -> None:
    """A workload without room moves directly only if its floors hold: here they do not."""
    plan = make_surge_plan(
        [_w("big", *NIGHT)],
        wave_size=1,
        floors=[FloorRule(min_available_percent=100)],
        order="name",
        rooms=_rooms(1.0),
        spec=SurgeSpec(when_no_room="direct"),
    )
    assert not plan.safe and plan.violations


def test_peak_is_the_largest_wave_surge() -> None:
    """The announced peak (GPUs beyond the steady state) is the largest wave's surge."""
    ws = [_w(f"d{i}", *NIGHT) for i in range(3)]
    layout = size_waves(ws, max_size=2, rooms=_rooms(50.0), spec=SurgeSpec())
    assert layout.peak[GPU] == 8.0


def test_with_empty_workloads_propagated_one_replica_workloads_are_surged() -> None:
    """A binding listing cluster-b with 0 replicas shows empty workloads propagate: b has a
    member to raise, a keeps one to hold, so 1 replica moving a -> b keeps 100% available."""
    w = PlannedWorkload(
        WorkloadKey("ns", "s", "Deployment"),
        1,
        {"a": 1, "b": 0},
        {"b": 1},
        request={GPU: 1.0},
        candidates=frozenset({"a", "b"}),
    )
    assert w.members() == {"a", "b"}
    plan = make_surge_plan(
        [w],
        wave_size=1,
        floors=[FloorRule(min_available_percent=100)],
        order="name",
        rooms=_rooms(50.0),
        spec=SurgeSpec(),
    )
    assert plan.safe, plan.violations
    assert plan.waves[0][0].surge() == {"a": 1, "b": 1}
    assert plan.rooms[0].surge == {"b": {GPU: 1.0, "pods": 1.0}}


def test_waves_are_raised_ahead_while_they_fit_beside_the_surges_up() -> None:
    """Four 4-GPU surges in waves of one: with 20 GPUs usable in b all four are up during wave
    1 (16); with 50% headroom, two at a time while they fit; the plan counts in each wave's
    held extra the surges raised ahead of it."""
    ws = [_w(f"d{i}", *NIGHT) for i in range(4)]
    roomy = size_waves(ws, max_size=1, rooms=_rooms(20.0), spec=SurgeSpec(headroom_percent=0))
    assert raise_ahead(roomy, 0.0) == [4, 4, 4, 4]
    rooms, spec = _rooms(20.0), SurgeSpec(headroom_percent=50)
    tight = size_waves(ws, max_size=1, rooms=rooms, spec=spec)
    # usable 10, 8, 6, 4 (each move keeps its 4 GPUs in b): two surges up at a time while
    # they fit (waves 1 and 2, then 2 and 3), one from wave 3 on
    assert raise_ahead(tight, 50.0) == [2, 3, 3, 4]
    plan = make_surge_plan(ws, wave_size=1, floors=[], order="name", rooms=rooms, spec=spec)
    assert [room.raised_to for room in plan.rooms] == [2, 3, 3, 4]
    assert [room.extra["b"][GPU] for room in plan.rooms] == [8.0, 8.0, 4.0, 4.0]


def test_a_wave_with_a_bridge_is_not_raised_ahead() -> None:
    """A bridge rewrites a policy: its wave, and every wave after it, waits for its turn."""
    ws = [_w(f"d{i}", *NIGHT) for i in range(3)]
    layout = size_waves(ws, max_size=1, rooms=_rooms(50.0), spec=SurgeSpec())
    layout.waves[1] = [replace(layout.waves[1][0], surged=False, bridged=True)]
    assert raise_ahead(layout, 10.0) == [1, 3, 3]
