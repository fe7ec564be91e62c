"""Karmada's replica division: Webster seats, UID-parity tie-break, dynamic Steady/Fresh modes.

Every expected answer is worked out by hand in the comments, from the Webster rule: the next
replica goes to the highest weight / (2 * seats + 1); ties go to fewer seats, then by name
(ascending for an even FNV-32a hash of the UID, descending for an odd one).
"""

from __future__ import annotations

import pytest

from tidal.domain.division import (
    Unschedulable,
    dynamic_divide,
    estimate_available_replicas,
    fnv32a,
    names_descending,
    order_candidates,
    static_weight_divide,
    webster_allocate,
    webster_divide,
)

EVEN_UID = "00000000-0000-0000-0000-000000000001"  # fnv32a(...) & 1 == 0
ODD_UID = "00000000-0000-0000-0000-000000000002"  # fnv32a(...) & 1 == 1


def test_fnv32a_matches_the_published_test_vectors() -> None:
    """The hash is FNV-1a 32-bit (offset basis, known values for '', 'a', 'foobar')."""
    assert fnv32a("") == 0x811C9DC5
    assert fnv32a("a") == 0xE40C292C
    assert fnv32a("foobar") == 0xBF9CF968


def test_uid_parity_picks_the_name_order() -> None:
    """An odd hash means descending names on ties; even or empty UID means ascending."""
    assert fnv32a(EVEN_UID) % 2 == 0 and not names_descending(EVEN_UID)
    assert fnv32a(ODD_UID) % 2 == 1 and names_descending(ODD_UID)
    assert not names_descending("")


def test_static_one_to_three_over_nine() -> None:
    """Weights a:1, b:3 over 9 replicas give a:2, b:7."""
    # seat 1: a 1/1=1,  b 3/1=3      -> b (b=1)
    # seat 2: a 1,      b 3/3=1 tie  -> fewer seats: a (a=1)
    # seat 3: a 1/3,    b 1          -> b (b=2)
    # seat 4: a .333,   b 3/5=.6     -> b (b=3)
    # seat 5: a .333,   b 3/7=.43    -> b (b=4)
    # seat 6: a .333,   b 3/9=.333   -> tie, fewer seats: a (a=2)
    # seat 7: a 1/5=.2, b .333       -> b (b=5)
    # seat 8: a .2,     b 3/11=.27   -> b (b=6)
    # seat 9: a .2,     b 3/13=.23   -> b (b=7)
    assert webster_divide(9, {"a": 1, "b": 3}) == {"a": 2, "b": 7}


def test_static_eighty_twenty_over_nine() -> None:
    """Weights a:80, b:20 over 9 replicas give a:7, b:2."""
    # quotients a: 80, 26.7, 16, 11.4, 8.9, 7.3, 6.2, 5.3 ...; b: 20, 6.7, 4 ...
    # the nine largest: 80a 26.7a 20b 16a 11.4a 8.9a 7.3a 6.7b 6.2a -> a 7, b 2
    assert webster_divide(9, {"a": 80, "b": 20}) == {"a": 7, "b": 2}


@pytest.mark.parametrize(
    ("uid", "expected"), [(EVEN_UID, {"a": 2, "b": 1}), (ODD_UID, {"a": 1, "b": 2})]
)
def test_equal_weights_over_an_odd_count_follow_the_uid_parity(
    uid: str, expected: dict[str, int]
) -> None:
    """Equal weights over 3 replicas: the UID-hash parity decides who gets the extra one."""
    # seat 1: tie (1 vs 1, both 0 seats) -> name order picks the first
    # seat 2: the other has priority 1 vs 1/3 -> it wins
    # seat 3: tie again (1/3 vs 1/3, both 1 seat) -> name order again
    assert webster_divide(3, {"a": 1, "b": 1}, uid) == expected


def test_clusters_without_weight_get_nothing_and_no_weights_means_equal() -> None:
    """Static lists leave unweighted candidates out; with no weight at all all weigh 1."""
    assert static_weight_divide(4, ["a", "b", "c"], {"a": 1, "b": 1}) == {"a": 2, "b": 2}
    # all weigh 1 over 4: a, b, c (ties by name), then a (1/3 ties, fewer seats all equal -> a)
    assert static_weight_divide(4, ["a", "b", "c"], {}) == {"a": 2, "b": 1, "c": 1}


def test_allocate_keeps_initial_seats_and_lists_every_party() -> None:
    """Adding 2 seats on top of a:1 b:2 c:3 with weights 1:2:3 gives a:1 b:3 c:4."""
    # priorities: a 1/3=.33, b 2/5=.4, c 3/7=.43 -> c (4); then c 3/9=.33, b .4 -> b (3)
    assert webster_allocate(2, {"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 2, "c": 3}) == {
        "a": 1,
        "b": 3,
        "c": 4,
    }
    assert webster_allocate(0, {"a": 0}, None) == {"a": 0}


def test_dynamic_fresh_counts_own_replicas_as_available() -> None:
    """Fresh: a holds 4 of 6 and has 2 free, b has 6 free -> weights a:6, b:6 -> 3:3."""
    # Fresh weights: a 2+4=6, b 6+0=6; 6 seats alternate a,b (ties, fewer seats, name asc) -> 3:3
    result = dynamic_divide(6, [("a", 2), ("b", 6)], {"a": 4, "b": 2}, mode="Fresh")
    assert result == {"a": 3, "b": 3}


def test_dynamic_steady_keeps_existing_and_places_only_the_delta() -> None:
    """Steady: same binding keeps a:4 b:2 when the total is unchanged, whatever capacity says."""
    result = dynamic_divide(6, [("a", 2), ("b", 60)], {"a": 4, "b": 2}, mode="Steady")
    assert result == {"a": 4, "b": 2}


def test_dynamic_steady_scale_up_divides_the_delta_by_free_capacity() -> None:
    """Steady scale-up from a:4 b:2 to 10: the 4 new go by free capacity a:1 b:3 -> a:5 b:5."""
    # delta 4 over free capacity b:3, a:1:
    # seat1: b 3 vs a 1 -> b1;  seat2: a 1 vs b 3/3=1 tie, a has fewer seats -> a1
    # seat3: b 1 vs a 1/3 -> b2; seat4: b 3/5=.6 vs a .33 -> b3  => a +1, b +3 => a 5, b 5
    result = dynamic_divide(10, [("a", 1), ("b", 3)], {"a": 4, "b": 2}, mode="Steady")
    assert result == {"a": 5, "b": 5}


def test_dynamic_steady_scale_down_is_proportional_to_previous() -> None:
    """Steady scale-down from a:6 b:2 to 4: Webster over weights 6:2 gives a:3 b:1."""
    # seat1 a 6; seat2 a 6/3=2 vs b 2 tie, b has fewer seats -> b
    # seat3 a 2 vs b 2/3 -> a; seat4 a 6/5=1.2 vs b .67 -> a
    result = dynamic_divide(4, [("a", 0), ("b", 0)], {"a": 6, "b": 2}, mode="Steady")
    assert result == {"a": 3, "b": 1}


def test_dynamic_unschedulable_when_total_capacity_is_short() -> None:
    """Fewer available replicas than wanted raises Unschedulable with upstream's message."""
    with pytest.raises(Unschedulable, match=r"Clusters available replicas 5 are not enough"):
        dynamic_divide(6, [("a", 2), ("b", 3)], {}, mode="Fresh")


def test_aggregated_uses_as_few_clusters_as_possible() -> None:
    """Aggregated: 5 replicas with a:3 b:8 free fit in b alone (largest first)."""
    assert dynamic_divide(5, [("a", 3), ("b", 8)], {}, mode="Steady", aggregated=True) == {"b": 5}
    # 10 needs both: the prefix b(8)+a(3), then Webster over 8:3:
    # quotients b: 8, 2.67, 1.6, 1.14, .89, .73, .62; a: 3, 1, .6
    # ten largest: 8b 3a 2.67b 1.6b 1.14b 1a .89b .73b .62b .6a (next b is 8/15=.53) -> b 7, a 3
    result = dynamic_divide(10, [("a", 3), ("b", 8)], {}, mode="Fresh", aggregated=True)
    assert result == {"a": 3, "b": 7}


def test_estimator_takes_the_scarcest_resource_and_the_pods_budget() -> None:
    """Free cpu 3500m / 1000m = 3, memory 8Gi / 1Gi = 8, pods 10 - 2 = 8 -> 3 replicas."""
    gib = 2**30
    allocatable = {"cpu": 4000, "memory": 10 * gib, "pods": 10}
    allocated = {"cpu": 500, "memory": 2 * gib, "pods": 2}
    request = {"cpu": 1000, "memory": gib}
    assert estimate_available_replicas(allocatable, allocated, {}, request) == 3
    assert estimate_available_replicas(allocatable, allocated, {"pods": 8}, request) == 0
    assert estimate_available_replicas(allocatable, {}, {}, {"nvidia.com/gpu": 1}) == 0
    assert estimate_available_replicas(allocatable, {}, {}, {}) == 10


def test_candidates_prefer_current_clusters_then_room_then_name() -> None:
    """Locality first, then available replicas including the binding's own, then name."""
    assert order_candidates(["a", "b", "c"], {"a": 1, "b": 5, "c": 5}, {}) == ["b", "c", "a"]
    assert order_candidates(["a", "b", "c"], {"a": 1, "b": 5, "c": 5}, {"a": 1}) == ["a", "b", "c"]
