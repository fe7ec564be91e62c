"""The emulator's own replica division against upstream's worked answers (test tables cited)."""

from __future__ import annotations

import pytest

from tidal_sim.controllers.division import (
    NotEnoughReplicas,
    divide_dynamic,
    divide_static,
    webster_seats,
)

VOTES = {"PartyA": 100000, "PartyB": 80000, "PartyC": 30000, "PartyD": 20000}
M1, M2, M3, M4 = "member1", "member2", "member3", "member4"


@pytest.mark.parametrize(
    ("seats", "expected"),
    [
        (1, (1, 0, 0, 0)),
        (2, (1, 1, 0, 0)),
        (3, (2, 1, 0, 0)),
        (4, (2, 1, 1, 0)),
        (5, (2, 2, 1, 0)),
        (6, (2, 2, 1, 1)),
        (7, (3, 2, 1, 1)),
        (8, (3, 3, 1, 1)),
    ],
)
def test_webster_classic_example_rounds(seats: int, expected: tuple[int, ...]) -> None:
    """pkg/util/helper/webstermethod_test.go TestAllocateWebsterSeats "classic example, round N"."""
    got = webster_seats(seats, VOTES)
    assert tuple(got[p] for p in ("PartyA", "PartyB", "PartyC", "PartyD")) == expected


def test_webster_ties_and_initial_assignments() -> None:
    """webstermethod_test.go: "break tie by seats", "break tie by name", the three
    "non-initial allocation" cases and "newSeats is 0"."""
    assert webster_seats(1, {"PartyA": 3, "PartyB": 1}, {"PartyA": 1, "PartyB": 0}) == {
        "PartyA": 1,
        "PartyB": 1,
    }
    assert webster_seats(1, {"PartyA": 1, "PartyB": 1}) == {"PartyA": 1, "PartyB": 0}
    assert webster_seats(2, {"NewParty1": 1, "NewParty2": 1}, {"OldParty": 0}) == {
        "NewParty1": 1,
        "NewParty2": 1,
        "OldParty": 0,
    }
    assert webster_seats(2, {"OldParty": 1, "NewParty": 1}, {"OldParty": 1}) == {
        "NewParty": 2,
        "OldParty": 1,
    }
    assert webster_seats(2, {"PartyA": 100}, {"PartyB": 3}) == {"PartyA": 2, "PartyB": 3}
    assert webster_seats(0, {"PartyA": 100, "PartyB": 200}) == {"PartyA": 0, "PartyB": 0}
    assert webster_seats(1, {}) == {}


def test_uid_parity_turns_the_name_order() -> None:
    """pkg/util/helper/binding.go tieBreakerByUID: an odd FNV-32a hash prefers larger names."""
    even, odd = "00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002"
    assert divide_static(1, ["a", "b"], {"a": 1, "b": 1}, even) == {"a": 1}
    assert divide_static(1, ["a", "b"], {"a": 1, "b": 1}, odd) == {"b": 1}
    assert divide_static(1, ["a", "b"], {"a": 1, "b": 1}, "") == {"a": 1}


@pytest.mark.parametrize(
    ("replicas", "weights", "expected"),
    [
        (12, {M1: 3, M2: 2, M3: 1}, {M1: 6, M2: 4, M3: 2}),  # "replica 12, weight 3:2:1"
        (12, {}, {M1: 4, M2: 4, M3: 4}),  # "replica 12, default weight"
        (13, {M1: 3, M2: 2, M3: 1}, {M1: 7, M2: 4, M3: 2}),  # "replica 13, weight 3:2:1"
        (14, {M1: 3, M2: 2, M3: 1}, {M1: 7, M2: 5, M3: 2}),  # "replica 14, weight 3:2:1"
        (0, {M1: 1, M2: 1}, {}),  # "insufficient replica assignment should get 0 replica"
    ],
)
def test_static_weights(replicas: int, weights: dict[str, int], expected: dict[str, int]) -> None:
    """pkg/scheduler/core/assignment_test.go Test_assignByStaticWeightStrategy."""
    assert divide_static(replicas, [M1, M2, M3], weights) == expected


@pytest.mark.parametrize(
    ("available", "aggregated", "expected"),
    [
        ([(M1, 18), (M2, 12), (M3, 6)], False, {M1: 6, M2: 4, M3: 2}),
        ([(M1, 20), (M2, 12), (M3, 6)], False, {M1: 6, M2: 4, M3: 2}),
        ([(M1, 6), (M2, 12), (M3, 6)], False, {M1: 3, M2: 6, M3: 3}),
        ([(M2, 12), (M1, 6), (M3, 6)], True, {M2: 12}),
        ([(M1, 6), (M2, 6), (M3, 6)], True, {M1: 6, M2: 6}),
    ],
)
def test_dynamic_divide_replicas(
    available: list[tuple[str, int]], aggregated: bool, expected: dict[str, int]
) -> None:
    """pkg/scheduler/core/division_algorithm_test.go Test_dynamicDivideReplicas (all five)."""
    assert divide_dynamic(12, available, {}, fresh=False, aggregated=aggregated) == expected


@pytest.mark.parametrize(
    ("replicas", "available", "current", "aggregated", "expected"),
    [
        # "replica 12 -> 6, dynamic weighted 1:1:1"
        (6, [(M1, 1), (M2, 1), (M3, 1)], {M1: 2, M2: 4, M3: 6}, False, {M1: 1, M2: 2, M3: 3}),
        # "replica 12 -> 24, dynamic weighted 10:10:10"
        (24, [(M1, 10), (M2, 10), (M3, 10)], {M1: 2, M2: 4, M3: 6}, False, {M1: 6, M2: 8, M3: 10}),
        # "replica 12 -> 6, aggregated 1:1:1"
        (6, [(M1, 1), (M2, 1), (M3, 1)], {M1: 4, M2: 8}, True, {M2: 6}),
        # "replica 12 -> 8, aggregated 100:100"
        (8, [(M1, 100), (M2, 100)], {M1: 4, M2: 8}, True, {M2: 8}),
        # "replica 12 -> 24, aggregated 4:6:8"
        (24, [(M1, 4), (M2, 6), (M3, 8)], {M1: 4, M2: 8}, True, {M1: 7, M2: 12, M3: 5}),
        # "replica 12 -> 24, aggregated 6:6:20"
        (24, [(M1, 6), (M2, 6), (M3, 20)], {M1: 4, M2: 8}, True, {M1: 10, M2: 14}),
        # "replica 12 -> 24, aggregated 4:8:12, with cluster2 disappeared and cluster4 appeared"
        (24, [(M1, 4), (M3, 8), (M4, 12)], {M1: 4, M2: 8}, True, {M1: 7, M3: 7, M4: 10}),
    ],
)
def test_dynamic_scale_steady(
    replicas: int,
    available: list[tuple[str, int]],
    current: dict[str, int],
    aggregated: bool,
    expected: dict[str, int],
) -> None:
    """pkg/scheduler/core/assignment_test.go Test_dynamicScale (the cases with one answer)."""
    got = divide_dynamic(replicas, available, current, fresh=False, aggregated=aggregated)
    assert got == expected


@pytest.mark.parametrize("aggregated", [False, True])
def test_dynamic_scale_short_of_capacity_is_unschedulable(aggregated: bool) -> None:
    """assignment_test.go Test_dynamicScale "replica 12 -> 24, dynamic weighted 1:1:1" and
    "aggregated 1:1:1": wantErr, with upstream's UnschedulableError message."""
    with pytest.raises(NotEnoughReplicas, match="Clusters available replicas 3 are not enough"):
        divide_dynamic(
            24,
            [(M1, 1), (M2, 1), (M3, 1)],
            {M1: 2, M2: 4, M3: 6},
            fresh=False,
            aggregated=aggregated,
        )


def test_fresh_counts_the_bindings_own_replicas_as_available() -> None:
    """pkg/scheduler/core/division_algorithm.go dynamicFreshScale: own replicas are added to
    each cluster's available ones, the previous result is dropped."""
    # member1 holds 6 and has 0 free, member2 has 12 free: weights 6:12 over 6 -> 2:4
    assert divide_dynamic(6, [(M1, 0), (M2, 12)], {M1: 6}, fresh=True, aggregated=False) == {
        M1: 2,
        M2: 4,
    }
    # a team estimator answering 0 for member1 and no own replicas there: all to member2
    assert divide_dynamic(6, [(M1, 0), (M2, 12)], {}, fresh=True, aggregated=False) == {M2: 6}
