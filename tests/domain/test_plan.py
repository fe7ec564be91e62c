"""The plan: waves, predicted totals per step, and floors checked before, during and after."""

from __future__ import annotations

from tidal.domain.floors import FloorRule
from tidal.domain.plan import PlannedWorkload, make_plan
from tidal.domain.waves import WorkloadKey


def _w(
    name: str, before: dict[str, int], after: dict[str, int], replicas: int = 5
) -> PlannedWorkload:
    return PlannedWorkload(WorkloadKey("ns", name, "Deployment"), replicas, before, after)


def test_waves_and_totals_per_step() -> None:
    """Four 80/20 workloads moving to 0/100 in waves of two: totals shift wave by wave."""
    ws = [_w(f"d{i}", {"a": 4, "b": 1}, {"b": 5}) for i in range(4)]
    plan = make_plan(ws, wave_size=2, floors=[FloorRule(("b",), 1)])
    assert [len(w) for w in plan.waves] == [2, 2]
    assert [s.label for s in plan.steps] == ["before", "wave 1", "wave 2", "end"]
    assert plan.steps[0].assigned == {"a": 16, "b": 4}
    assert plan.steps[1].assigned == {"a": 8, "b": 12}
    assert plan.steps[-1].assigned == {"a": 0, "b": 20} or plan.steps[-1].assigned == {"b": 20}
    assert plan.steps[1].lowest_ready["b"] == 1  # in flight, only the staying replica counts
    assert plan.safe


def test_floor_broken_at_the_end_is_unsafe() -> None:
    """A 1-replica workload that the new weights give 0 in a floor cluster makes it unsafe."""
    ws = [_w("one", {"a": 1}, {"b": 1}, replicas=1)]
    plan = make_plan(ws, wave_size=1, floors=[FloorRule(("a",), 1)])
    assert not plan.safe
    labels = {label for label, _ in plan.violations}
    assert labels == {"wave 1", "end"}


def test_floor_broken_only_in_flight_is_unsafe() -> None:
    """Moving every replica at once breaks a percentage floor while the wave is in flight."""
    ws = [_w("d", {"a": 4, "b": 1}, {"b": 5})]
    plan = make_plan(ws, wave_size=1, floors=[FloorRule(min_available_percent=50)])
    assert [label for label, _ in plan.violations] == ["wave 1"]


def test_problems_make_a_plan_unsafe() -> None:
    """An unschedulable prediction is reported and refuses the plan."""
    w = PlannedWorkload(
        WorkloadKey("ns", "x", "Deployment"),
        3,
        {"a": 3},
        {"a": 3},
        exact=False,
        problem="unschedulable: short",
    )
    plan = make_plan([w], wave_size=1)
    assert not plan.safe and plan.problems == ["ns/Deployment/x: unschedulable: short"]


def test_empty_selection_gives_no_waves() -> None:
    """Nothing selected: no waves, still a safe plan."""
    plan = make_plan([], wave_size=3)
    assert plan.waves == [] and plan.safe


def test_plan_serialises() -> None:
    """to_dict carries waves, steps and the verdict."""
    d = make_plan([_w("d", {"a": 5}, {"a": 5})], wave_size=1).to_dict()
    assert d["safe"] is True and d["waves"][0]["workloads"][0]["workload"] == "ns/Deployment/d"


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 6), st.integers(0, 6)),
        min_size=1,
        max_size=12,
    ),
    st.integers(1, 5),
)
def test_totals_move_monotonically_from_before_to_end(
    rows: list[tuple[int, int, int, int]], size: int
) -> None:
    """Totals run from current to predicted; in-flight ready never exceeds before or after."""
    ws = [
        _w(f"d{i:02d}", {"a": a, "b": b}, {"a": c, "b": d}, replicas=max(1, a + b))
        for i, (a, b, c, d) in enumerate(rows)
    ]
    plan = make_plan(ws, wave_size=size)
    first, last = plan.steps[0].assigned, plan.steps[-1].assigned
    assert first == {"a": sum(r[0] for r in rows), "b": sum(r[1] for r in rows)}
    assert last == {"a": sum(r[2] for r in rows), "b": sum(r[3] for r in rows)}
    assert plan.steps[-2].assigned == last  # the last wave ends where the plan ends
    for w in ws:
        for cluster, n in w.in_flight().items():
            assert n <= w.before.get(cluster, 0) and n <= w.after.get(cluster, 0)


def _moving(pending: int) -> list[PlannedWorkload]:
    """d0 and d1 go from a:3 b:1 to b:4; d1 lacks room for `pending` of its replicas."""
    short = {"b": {"nvidia.com/gpu": 3.0, "pods": 1.0}}
    return [
        PlannedWorkload(
            WorkloadKey("ns", n, "Deployment"),
            4,
            {"a": 3, "b": 1},
            {"b": 4},
            short=short if n == "d1" else {},
            pending={"b": pending} if n == "d1" else {},
        )
        for n in ("d0", "d1")
    ]


def test_static_moves_beyond_free_capacity_are_named_per_wave() -> None:
    """A wave whose moved replicas lack room in the destination is reported with the
    workloads and the missing resources: a warning while every floor holds, a refusal when
    the replicas left Pending break one."""
    note = (
        "wave 2: replicas moved to b do not fit its free capacity (short of nvidia.com/gpu 3, "
        "pods 1) and would stay Pending: ns/Deployment/d1"
    )
    floor = [FloorRule(("b",), 1)]
    warned = make_plan(_moving(3), wave_size=1, floors=floor)
    assert warned.safe and warned.capacity == [note]
    assert warned.steps[-1].assigned == {"b": 8}
    refused = make_plan(_moving(4), wave_size=1, floors=floor)
    assert not refused.safe and refused.capacity == [] and note in refused.problems
    assert any(v.workload == "ns/Deployment/d1" and v.ready == 0 for _, v in refused.violations)
